package main

// The README and docs/ say what memdoctor does in commands and links; these
// tests keep them true. Every `memdoctor ...` command in a shell block
// (```sh, bash, shell, console) or in an inline code span is checked against
// the command tree `memdoctor help` prints: its subcommand and every flag
// must exist there. Every relative link, and its #anchor, must lead to a
// file and a heading that exist, and so must every repository path written
// as inline code (`docs/fleet.md`, `bench/trace.sh`). README.md stays short
// enough to read in two minutes: at most readmeMaxLines lines.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// readmeMaxLines is the README's budget: what memdoctor is, a picture,
// install, the everyday commands and links; depth belongs in docs/.
const readmeMaxLines = 150

// docFiles are the documents checked, relative to the repository: README.md
// and every Markdown file under docs/.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// docCommand is one memdoctor command line found in a document.
type docCommand struct {
	line int
	args []string // after "memdoctor"
	text string   // the line, for the message
}

var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// docCommands returns the memdoctor commands in a document's shell blocks
// and inline code spans.
func docCommands(doc string) []docCommand {
	var out []docCommand
	inCode, shell := false, false
	for i, l := range strings.Split(doc, "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			if inCode {
				inCode = false
				continue
			}
			inCode = true
			lang := strings.TrimPrefix(trimmed, "```")
			shell = lang == "sh" || lang == "bash" || lang == "shell" || lang == "console"
			continue
		}
		if inCode {
			if shell {
				for _, args := range memdoctorInvocations(strings.TrimPrefix(trimmed, "$ ")) {
					out = append(out, docCommand{n, args, trimmed})
				}
			}
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(l, -1) {
			if strings.HasPrefix(m[1], "memdoctor ") {
				for _, args := range memdoctorInvocations(m[1]) {
					out = append(out, docCommand{n, args, m[1]})
				}
			}
		}
	}
	return out
}

// shellWords splits a line as the shell would, enough for documentation:
// quotes, operators (| || && ; & $( ) < >) as words of their own, and a #
// comment dropped.
func shellWords(line string) []string {
	var (
		words []string
		cur   strings.Builder
		has   bool
	)
	flush := func() {
		if has {
			words = append(words, cur.String())
		}
		cur.Reset()
		has = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			has = true
			i += j + 1
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !has:
			flush()
			return words
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			flush()
			words = append(words, "$(")
			i++
		case strings.IndexByte("|&;()<>", c) >= 0:
			flush()
			op := string(c)
			if i+1 < len(line) && (line[i+1] == c || c == '>' && line[i+1] == '&') {
				op += string(line[i+1])
				i++
			}
			words = append(words, op)
		default:
			cur.WriteByte(c)
			has = true
		}
	}
	flush()
	return words
}

var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// memdoctorInvocations returns the arguments of each memdoctor run on a
// shell line: memdoctor (or a path to it, or `go run ./cmd/memdoctor`) in
// command position, after sudo, env, time or variable assignments.
func memdoctorInvocations(line string) [][]string {
	words := shellWords(line)
	var out [][]string
	cmdPos := true
	for i := 0; i < len(words); i++ {
		w := words[i]
		isOp := slices.Contains([]string{"|", "||", "&&", ";", "&", "$(", "(", ")"}, w)
		switch {
		case isOp:
			cmdPos = true
			continue
		case slices.Contains([]string{"<", ">", ">>", "2>", ">&"}, w) || strings.HasSuffix(w, ">"):
			i++ // the redirection's file
			continue
		case cmdPos && (w == "sudo" || w == "env" || w == "time" || envAssignment.MatchString(w)):
			continue
		}
		self := cmdPos && (w == "memdoctor" || strings.HasSuffix(w, "/memdoctor"))
		if cmdPos && w == "go" && i+2 < len(words) && words[i+1] == "run" && strings.HasSuffix(words[i+2], "/cmd/memdoctor") {
			self = true
			i += 2
		}
		cmdPos = false
		if !self {
			continue
		}
		var args []string
		for i+1 < len(words) {
			next := words[i+1]
			if slices.Contains([]string{"|", "||", "&&", ";", "&", ")", "<", ">", ">>", "2>", ">&"}, next) {
				break
			}
			args = append(args, next)
			i++
		}
		out = append(out, args)
	}
	return out
}

// placeholder reports a documentation placeholder rather than a word the
// user types: [optional], ..., and the ellipsis.
func placeholder(w string) bool {
	return w == "..." || w == "…" || strings.HasPrefix(w, "[") || strings.HasSuffix(w, "]")
}

// checkInvocation says what in args the command tree does not have.
func checkInvocation(root *cobra.Command, args []string) error {
	cmd := root
	sawSub := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if placeholder(a) {
			continue
		}
		if a == "--" {
			return nil
		}
		if !strings.HasPrefix(a, "-") || !looksLikeFlag(a) {
			if !sawSub && cmd == root {
				sub := subcommand(root, a)
				if sub == nil {
					return fmt.Errorf("no command %q (memdoctor help lists: %s)", a, strings.Join(commandNames(root), ", "))
				}
				cmd, sawSub = sub, true
			}
			continue
		}
		name, _, hasValue := strings.Cut(a, "=")
		takesValue := false
		if long, ok := strings.CutPrefix(name, "--"); ok {
			fl := cmd.Flags().Lookup(long)
			if fl == nil {
				fl = cmd.InheritedFlags().Lookup(long)
			}
			if fl == nil && long != "help" && (cmd != root || long != "version") {
				return fmt.Errorf("%s has no flag --%s (%s --help lists them)", cmd.CommandPath(), long, cmd.CommandPath())
			}
			takesValue = fl != nil && fl.NoOptDefVal == ""
		} else {
			// -x, or -xVALUE for a shorthand that takes one.
			short := name[1:2]
			fl := cmd.Flags().ShorthandLookup(short)
			if fl == nil {
				fl = cmd.InheritedFlags().ShorthandLookup(short)
			}
			if fl == nil && short != "h" {
				return fmt.Errorf("%s has no flag -%s (%s --help lists them)", cmd.CommandPath(), short, cmd.CommandPath())
			}
			takesValue = fl != nil && fl.NoOptDefVal == ""
			hasValue = hasValue || len(name) > 2
		}
		if takesValue && !hasValue {
			i++ // its value, whatever it looks like
		}
	}
	return nil
}

// subcommand finds a visible or hidden subcommand by name or alias.
func subcommand(root *cobra.Command, name string) *cobra.Command {
	if name == "help" || name == "completion" {
		return root // cobra's own
	}
	for _, c := range root.Commands() {
		if c.Name() == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

func commandNames(root *cobra.Command) []string {
	var names []string
	for _, c := range root.Commands() {
		if !c.Hidden {
			names = append(names, c.Name())
		}
	}
	return names
}

// TestDocCommands: every memdoctor command the README and docs/ show exists,
// with every flag it uses.
func TestDocCommands(t *testing.T) {
	root := repoRoot(t)
	tree := newRoot(&strings.Builder{}, &strings.Builder{})
	tree.InitDefaultHelpFlag()
	tree.InitDefaultVersionFlag()
	total := 0
	for _, f := range docFiles(t, root) {
		doc, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(string(doc)) {
			total++
			if err := checkInvocation(tree, c.args); err != nil {
				t.Errorf("%s:%d: %s\n\t%s", f, c.line, err, c.text)
			}
		}
	}
	// The README alone shows more than ten; zero means the extraction broke.
	if total < 10 {
		t.Fatalf("found only %d memdoctor commands in the docs: the extraction is broken", total)
	}
	t.Logf("%d memdoctor commands checked", total)
}

var (
	mdLink      = regexp.MustCompile(`!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	repoPath    = regexp.MustCompile(`^(docs|bench|scripts|deploy|packaging|lab|preload|testdata|internal|cmd)/[A-Za-z0-9_.\-/]*$`)
	anchorStrip = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// headingAnchors returns the anchors GitHub gives a document's headings
// (lower case, punctuation dropped, spaces as hyphens, -1, -2 for repeats)
// and its explicit <a id> anchors.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			anchors[m[1]] = true
		}
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		h = strings.ReplaceAll(h, "`", "")
		a := strings.ReplaceAll(anchorStrip.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// docLinks says which links and repository paths of a document lead
// nowhere. file is relative to root.
func docLinks(root, file, doc string) []string {
	var bad []string
	dir := filepath.Dir(filepath.Join(root, file))
	inCode := false
	for i, l := range strings.Split(doc, "\n") {
		n := i + 1
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		prose := inlineCode.ReplaceAllString(l, "")
		for _, m := range mdLink.FindAllStringSubmatch(prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p, anchor, _ := strings.Cut(target, "#")
			if p == "" {
				if !headingAnchors(doc)[anchor] {
					bad = append(bad, fmt.Sprintf("%s:%d: link %s: no heading with that anchor here", file, n, target))
				}
				continue
			}
			full := filepath.Join(dir, filepath.FromSlash(p))
			if rel, err := filepath.Rel(root, full); err != nil || strings.HasPrefix(rel, "..") {
				bad = append(bad, fmt.Sprintf("%s:%d: %s leaves the repository", file, n, target))
				continue
			}
			b, err := os.ReadFile(full)
			if err != nil {
				if st, serr := os.Stat(full); serr == nil && st.IsDir() && anchor == "" {
					continue
				}
				bad = append(bad, fmt.Sprintf("%s:%d: link %s: no such file", file, n, target))
				continue
			}
			if anchor != "" && strings.HasSuffix(full, ".md") && !headingAnchors(string(b))[anchor] {
				bad = append(bad, fmt.Sprintf("%s:%d: link %s: %s has no heading with anchor #%s", file, n, target, p, anchor))
			}
		}
		for _, m := range inlineCode.FindAllStringSubmatch(l, -1) {
			if !repoPath.MatchString(m[1]) {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m[1]))); err != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: `%s`: no such file in the repository", file, n, m[1]))
			}
		}
	}
	return bad
}

// TestDocLinks: every relative link and anchor in README.md and docs/, and
// every repository path they write as code, exists.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	for _, f := range docFiles(t, root) {
		doc, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range docLinks(root, f, string(doc)) {
			t.Error(b)
		}
	}
}

// TestReadmeLength: README.md stays a two-minute read.
func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page under docs/ and link it", n, readmeMaxLines)
	}
}

// TestDocCheckersFail shows the checks above can fail: a document with a
// command, a flag, a link, an anchor and a path that do not exist.
func TestDocCheckersFail(t *testing.T) {
	tree := newRoot(&strings.Builder{}, &strings.Builder{})
	doc := "# Title\n\n```sh\nsudo memdoctor chekc --json\nmemdoctor check --top 5 --no-such-flag | jq .\n" +
		"LD_PRELOAD=$(memdoctor preload --print-path) app\nmemdoctor report --from SRC -o out.html [--since ...]\n```\n\n" +
		"See [rules](rules.md#no-such-rule), [gone](nowhere.md), [here](#title) and `docs/nowhere.md`; run `memdoctor check --sacn-pages`.\n"
	var cmdErrs []string
	for _, c := range docCommands(doc) {
		if err := checkInvocation(tree, c.args); err != nil {
			cmdErrs = append(cmdErrs, err.Error())
		}
	}
	want := []string{`no command "chekc"`, "no flag --no-such-flag", "no flag --sacn-pages"}
	if len(cmdErrs) != len(want) {
		t.Fatalf("command errors %q, want %d (the two valid lines pass)", cmdErrs, len(want))
	}
	for i, w := range want {
		if !strings.Contains(cmdErrs[i], w) {
			t.Errorf("error %d: %q, want it to say %q", i, cmdErrs[i], w)
		}
	}
	root := repoRoot(t)
	bad := docLinks(root, "docs/example.md", doc)
	wantLinks := []string{"has no heading with anchor #no-such-rule", "nowhere.md: no such file", "`docs/nowhere.md`: no such file"}
	if len(bad) != len(wantLinks) {
		t.Fatalf("link errors %q, want %d (#title is valid)", bad, len(wantLinks))
	}
	for i, w := range wantLinks {
		if !strings.Contains(bad[i], w) {
			t.Errorf("link error %d: %q, want it to say %q", i, bad[i], w)
		}
	}
	excerpt := "<!-- excerpt: testdata/golden/check-healthy-6.1-x86_64-v2.txt -->\n```text\nFINDINGS\n...\nFINDINGS: none, I promise\n```\n"
	badEx := docExcerpts(root, "docs/example.md", excerpt)
	if len(badEx) != 1 || !strings.Contains(badEx[0], "FINDINGS: none, I promise") {
		t.Errorf("excerpt errors %q, want one naming the line the file does not have", badEx)
	}
}

var excerptOf = regexp.MustCompile(`^<!-- excerpt: (\S+) -->$`)

// docExcerpts says which lines of the code block under an
// `<!-- excerpt: PATH -->` comment are not lines of PATH (a repository
// file, such as a golden output that a test keeps true). "..." stands for
// lines left out.
func docExcerpts(root, file, doc string) []string {
	var bad []string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := excerptOf.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m[1])))
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s:%d: excerpt of %s: %v", file, i+1, m[1], err))
			continue
		}
		have := map[string]bool{}
		for _, l := range strings.Split(string(src), "\n") {
			have[strings.TrimRight(l, " ")] = true
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			bad = append(bad, fmt.Sprintf("%s:%d: an excerpt comment without a code block right under it", file, i+1))
			continue
		}
		for j := i + 2; j < len(lines) && !strings.HasPrefix(lines[j], "```"); j++ {
			l := strings.TrimRight(lines[j], " ")
			if strings.TrimSpace(l) == "..." || have[l] {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s:%d: not a line of %s (copy it again from there):\n\t%s", file, j+1, m[1], l))
		}
	}
	return bad
}

// TestDocExcerpts: output shown in the docs as an excerpt of a file is that
// file's, line for line.
func TestDocExcerpts(t *testing.T) {
	root := repoRoot(t)
	n := 0
	for _, f := range docFiles(t, root) {
		doc, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(doc), "<!-- excerpt: ")
		for _, b := range docExcerpts(root, f, string(doc)) {
			t.Error(b)
		}
	}
	if n == 0 {
		t.Error("no excerpt comment found: the README's check excerpt lost its <!-- excerpt: PATH --> comment")
	}
}
