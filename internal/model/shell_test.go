package model

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nameAtoms are what random names are made of: letters, the shell's
// special characters, command substitutions, quotes of every kind,
// unicode (printable, invisible and direction-changing), control
// characters and bytes that are not UTF-8.
var nameAtoms = []string{
	"a", "Z", "0", ".", "_", " ", "  ", "'", `"`, `\`, "$", "`", "$(touch PWNED)", "`touch PWNED`", "${HOME}", "$UNSET_VAR",
	"*", "?", "[a]", "~", "!", "#", ";", "&", "|", "<", ">", "(", ")", "{", "}", "=", "%", ",", ":", "@", "+", "^",
	"'\\''", "\\n", "é", "中", "🙂", "\u00a0", "\u202e", "\u200b", "\u2028", "\ufeff",
	"\n", "\t", "\r", "\x1b[2J", "\x7f", "\u009b", "\xff", "\xc3",
}

// randomName is a file name (no / nor NUL, not . or ..) of 1 to 8 atoms,
// one in four starting with a dash.
func randomName(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(4) == 0 {
		b.WriteString("-")
	}
	for n := 1 + r.IntN(8); n > 0; n-- {
		b.WriteString(nameAtoms[r.IntN(len(nameAtoms))])
	}
	if s := b.String(); s != "." && s != ".." {
		return s
	}
	return "x"
}

// TestShellWordsProperty: for random names, each made a file in a scratch
// directory, the command memdoctor prints (cat PATH, printf of the path,
// of the name as an argument) is accepted by sh -n, and run by sh -c with
// set -u, in an empty directory, it prints exactly that path and reads
// exactly that file; a name that cannot be printed gives Unprintable in
// its place and a command with no control character; nothing is created
// where the commands run. Each shell installed (sh, bash, dash) runs
// them.
func TestShellWordsProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 23))
	t.Logf("seed %d", seed)
	n := 1500
	if testing.Short() {
		n = 300
	}
	files := t.TempDir()
	var cases []tc
	seen := map[string]bool{}
	for len(cases) < n {
		name := randomName(r)
		if seen[name] {
			continue
		}
		seen[name] = true
		c := tc{name: name, path: filepath.Join(files, name), want: filepath.Join(files, name), wantArg: name, token: fmt.Sprintf("token-%d", len(cases))}
		if !Printable(name) {
			c.want, c.wantArg = filepath.Join(files, Unprintable), Unprintable
		} else if strings.HasPrefix(name, "-") {
			c.wantArg = Unprintable
		}
		if err := os.WriteFile(c.path, []byte(c.token), 0o600); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		cases = append(cases, c)
	}
	var shells []string
	for _, sh := range []string{"sh", "bash", "dash"} {
		if _, err := exec.LookPath(sh); err == nil {
			shells = append(shells, sh)
		}
	}
	if len(shells) == 0 {
		t.Fatal("no shell")
	}
	const batch = 100
	for i := 0; i < len(cases); i += batch {
		part := cases[i:min(i+batch, len(cases))]
		var script strings.Builder
		script.WriteString("set -u\n")
		for _, c := range part {
			p, a := ShellPath(c.path), ShellArg(c.name)
			for _, w := range []string{p, a} {
				if !Printable(w) || strings.ContainsAny(w, "\n\r\t") {
					t.Fatalf("%q: the word %q is not printable", c.name, w)
				}
			}
			if c.want != c.path && strings.Contains(p, c.name) {
				t.Errorf("%q: the unprintable name is in the command %q", c.name, p)
			}
			fmt.Fprintf(&script, "printf '%%s\\0' %s %s; cat %s 2>/dev/null; printf '\\0'\n", p, a, p)
		}
		for _, sh := range shells {
			if out, err := exec.Command(sh, "-n", "-c", script.String()).CombinedOutput(); err != nil {
				t.Fatalf("%s -n rejects the commands for names %q: %v: %s", sh, names(part), err, out)
			}
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cmd := exec.CommandContext(ctx, sh, "-c", script.String())
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			err := cmd.Run()
			cancel()
			if err != nil {
				t.Fatalf("%s: %v: %s", sh, err, e.String())
			}
			got := strings.Split(o.String(), "\x00")
			if len(got) != 3*len(part)+1 {
				t.Fatalf("%s: %d words printed for %d names", sh, len(got)-1, len(part))
			}
			for j, c := range part {
				path, arg, content := got[3*j], got[3*j+1], got[3*j+2]
				if path != c.want {
					t.Errorf("%s: name %q: the command names %q, want %q", sh, c.name, path, c.want)
				}
				if arg != c.wantArg {
					t.Errorf("%s: name %q as an argument is %q, want %q", sh, c.name, arg, c.wantArg)
				}
				if c.want == c.path && content != c.token {
					t.Errorf("%s: name %q: cat read %q, want %q", sh, c.name, content, c.token)
				}
				if c.want != c.path && content != "" {
					t.Errorf("%s: name %q: the placeholder read %q", sh, c.name, content)
				}
			}
			if es, _ := os.ReadDir(dir); len(es) > 0 {
				t.Errorf("%s: the commands for %q made %s where they ran", sh, names(part), es[0].Name())
			}
		}
	}
}

// tc is one name of TestShellWordsProperty: the file made for it, what the
// printed path and argument must be, and the file's content.
type tc struct{ name, path, want, wantArg, token string }

func names(cs []tc) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// TestExplainUnprintable: a remedy whose command holds the placeholder says
// how to get the name, once; the others are left as they are.
func TestExplainUnprintable(t *testing.T) {
	rs := []Remedy{
		{Commands: []string{"cat " + ShellPath("/sys/fs/cgroup/a\nb/memory.max")}},
		{Commands: []string{"cat " + ShellPath("/sys/fs/cgroup/ab/memory.max")}},
	}
	ExplainUnprintable(rs)
	ExplainUnprintable(rs)
	if want := []string{"cat '/sys/fs/cgroup/" + Unprintable + "/memory.max'", UnprintableHelp}; strings.Join(rs[0].Commands, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", rs[0].Commands, want)
	}
	if len(rs[1].Commands) != 1 || rs[1].Commands[0] != "cat /sys/fs/cgroup/ab/memory.max" {
		t.Errorf("a printable path changed: %q", rs[1].Commands)
	}
}

// shellWord reads w as one word of a POSIX shell with no expansion in it
// (bare characters that are never special, single-quoted runs, backslash
// escapes); ok is false for anything the shell would expand, split,
// redirect or glob.
func shellWord(w string) (string, bool) {
	var b strings.Builder
	if w == "" {
		return "", false
	}
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c == '\'':
			j := strings.IndexByte(w[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(w[i+1 : i+1+j])
			i += j + 1
		case c == '\\':
			if i+1 >= len(w) || w[i+1] == '\n' {
				return "", false
			}
			i++
			b.WriteByte(w[i])
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./:@,+", c) >= 0:
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// FuzzShellQuote: whatever the name, ShellQuote, ShellArg and ShellPath
// give one printable shell word without expansions that the shell reads
// back as the name, or as the placeholder where the name (or a path's
// component) cannot be printed, or an argument starts with -. Seeds: the
// property test's atoms and the hostile corpus' names.
func FuzzShellQuote(f *testing.F) {
	for _, s := range append(nameAtoms, "job$(touch PWNED)", "$(touch X)", "", "-", "--help", "/sys/fs/cgroup/a\nb/memory.max", "a'b'c") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range []struct {
			how  string
			word string
			want string
		}{
			{"ShellQuote", ShellQuote(s), map[bool]string{true: s, false: Unprintable}[Printable(s)]},
			{"ShellArg", ShellArg(s), map[bool]string{true: s, false: Unprintable}[Printable(s) && !strings.HasPrefix(s, "-")]},
		} {
			got, ok := shellWord(c.word)
			if !ok || got != c.want || !Printable(c.word) {
				t.Fatalf("%s(%q) = %q: the shell reads %q (a plain word: %v), want %q", c.how, s, c.word, got, ok, c.want)
			}
		}
		parts := strings.Split(s, "/")
		for i, p := range parts {
			if !Printable(p) {
				parts[i] = Unprintable
			}
		}
		want := strings.Join(parts, "/")
		if s == "" {
			want = ""
		}
		got, ok := shellWord(ShellPath(s))
		if s == "" {
			got, ok = "", ShellPath(s) == "''"
		}
		if !ok || got != want || !Printable(ShellPath(s)) {
			t.Fatalf("ShellPath(%q) = %q: the shell reads %q (%v), want %q", s, ShellPath(s), got, ok, want)
		}
	})
}

// TestFitSourceQuotes: the commands a report names its source in, for a
// Prometheus instance and a store instance named with quotes, backslashes
// and a command substitution, run by sh in an empty directory (memdoctor a
// function printing its arguments), make no file and give memdoctor
// exactly that instance: in --match, as PromQL's string.
func TestFitSourceQuotes(t *testing.T) {
	const inst = `db7:9100"}' \ $(touch X) {instance="other`
	for _, c := range []struct {
		name string
		fit  func(*Report)
		want []string
	}{
		{"prometheus", func(r *Report) { r.FitPrometheus("http://127.0.0.1:9090", inst) },
			[]string{"diagnose", "--prometheus", "http://127.0.0.1:9090", "--match", "{instance=" + strconv.Quote(inst) + "}", "--range", "1d"}},
		{"store", func(r *Report) { r.FitSource("/var/lib/memdoctor/it's $(touch Y).db", inst) },
			[]string{"diagnose", "--from", "/var/lib/memdoctor/it's $(touch Y).db", "--instance", inst, "--since", "-1d"}},
	} {
		r := &Report{Findings: []Finding{{Remedies: []Remedy{{Commands: []string{"memdoctor diagnose --from SRC --since -1d"}}}}}}
		c.fit(r)
		cmd := r.Findings[0].Remedies[0].Commands[0]
		dir := t.TempDir()
		sh := exec.Command("sh", "-c", "set -u\nmemdoctor() { printf '%s\\0' \"$@\"; }\n"+cmd)
		sh.Dir = dir
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("%s: %q: %v", c.name, cmd, err)
		}
		if got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: %q runs memdoctor %q, want %q", c.name, cmd, got, c.want)
		}
		if es, _ := os.ReadDir(dir); len(es) > 0 {
			t.Errorf("%s: %q made %s", c.name, cmd, es[0].Name())
		}
	}
}
