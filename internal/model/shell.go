package model

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names that reach a command memdoctor prints (cgroup paths, process
// names, pod and unit names, label values, file paths) come from the host
// and from whoever writes its metrics: a local user names a cgroup or a
// process as they like. Every such name goes into a command through
// ShellQuote, ShellArg or ShellPath, so that pasting the command runs what
// it shows on exactly that name.

// Unprintable stands in a command for a name memdoctor does not print: one
// with a newline, a control character, a character that is invisible or
// turns the text's direction, or bytes that are not UTF-8. Quoting would
// keep the shell from running it, but a terminal splits a pasted line at
// its newline and shows what the other characters make it show, so the
// operator would not read what runs. UnprintableHelp says how to get the
// name.
const Unprintable = "<unprintable name>"

// UnprintableHelp is the comment a remedy carries when one of its commands
// holds Unprintable.
const UnprintableHelp = "# " + Unprintable + " stands for a name that holds a newline, a control or invisible character, or bytes that are not UTF-8 " +
	"(or an argument that starts with -): printed, it would split or disguise the command; list it with ls -b in its directory " +
	"(or read it from --json) and type it in quotes"

// Printable says whether s can be shown in a command as itself: valid
// UTF-8 without control characters (C0, DEL, C1), format characters
// (zero-width, direction marks and overrides) or line and paragraph
// separators.
func Printable(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return false
		}
		i += n
	}
	return true
}

// ShellQuote is s as one word of a POSIX shell: as is when it holds only
// characters no shell treats specially, else in single quotes (a single
// quote in it closes them, is escaped and reopens them). A name that is not Printable becomes Unprintable, in
// quotes.
func ShellQuote(s string) string {
	if !Printable(s) {
		s = Unprintable
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune("-_./:@,+", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellArg is ShellQuote for an argument a command could read as an
// option: one that starts with - becomes Unprintable too.
func ShellArg(s string) string {
	if strings.HasPrefix(s, "-") {
		return ShellQuote(Unprintable)
	}
	return ShellQuote(s)
}

// ShellPath is the path p as one shell word: each of its components that
// is not Printable replaced by Unprintable, the rest kept, the whole
// quoted.
func ShellPath(p string) string {
	if Printable(p) {
		return ShellQuote(p)
	}
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if !Printable(c) {
			parts[i] = Unprintable
		}
	}
	return ShellQuote(strings.Join(parts, "/"))
}

// ExplainUnprintable adds UnprintableHelp to each remedy with a command
// that holds Unprintable, once.
func ExplainUnprintable(rs []Remedy) {
	for i := range rs {
		need, has := false, false
		for _, c := range rs[i].Commands {
			need = need || strings.Contains(c, Unprintable)
			has = has || c == UnprintableHelp
		}
		if need && !has {
			rs[i].Commands = append(rs[i].Commands, UnprintableHelp)
		}
	}
}
