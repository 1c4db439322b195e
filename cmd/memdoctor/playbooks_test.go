package main

// docs/playbooks.md runs as written: every ```sh block of every playbook is
// run with bash -e, memdoctor on the PATH, in a scratch directory that sees
// the repository's testdata/ and internal/ (the test programs the blocks
// start), and its output must show what the playbook promises. The HTML
// comment above a block says, one directive a line:
//
//	needs: CMD              run the block only if CMD succeeds (else skip, saying so)
//	port: N                 N is the block's fixed port: it is given a free one
//	skip: TEXT | REASON     lines containing TEXT are not run here, for REASON
//	expect: REGEXP          a line of the output must match (multi-line mode)
//
// A block without the comment, or a playbook without a block, fails the
// test: a new playbook is tested or says why it cannot be.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

type playbookSkip struct{ text, reason string }

type playbookBlock struct {
	playbook string // its heading
	line     int    // of the block's first command in the document
	script   []string
	needs    []string
	port     string
	skips    []playbookSkip
	expects  []*regexp.Regexp
}

// parsePlaybooks reads the blocks of a playbooks document.
func parsePlaybooks(doc string) ([]playbookBlock, []string, error) {
	var (
		blocks   []playbookBlock
		headings []string
		heading  string
		pending  *playbookBlock // directives read, block not yet
		inDir    bool
		inCode   bool
	)
	sc := bufio.NewScanner(strings.NewReader(doc))
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case inCode:
			if l == "```" {
				inCode = false
				blocks = append(blocks, *pending)
				pending = nil
				continue
			}
			pending.script = append(pending.script, l)
		case inDir:
			if strings.TrimSpace(l) == "-->" {
				inDir = false
				continue
			}
			k, v, ok := strings.Cut(l, ": ")
			if !ok {
				return nil, nil, fmt.Errorf("line %d: directive %q: want name: value", n, l)
			}
			switch k {
			case "needs":
				pending.needs = append(pending.needs, v)
			case "port":
				pending.port = v
			case "skip":
				text, reason, ok := strings.Cut(v, " | ")
				if !ok || strings.TrimSpace(reason) == "" {
					return nil, nil, fmt.Errorf("line %d: skip without a reason: %q", n, l)
				}
				pending.skips = append(pending.skips, playbookSkip{text, reason})
			case "expect":
				re, err := regexp.Compile("(?m)" + v)
				if err != nil {
					return nil, nil, fmt.Errorf("line %d: %w", n, err)
				}
				pending.expects = append(pending.expects, re)
			default:
				return nil, nil, fmt.Errorf("line %d: unknown directive %q", n, k)
			}
		case strings.HasPrefix(l, "## "):
			heading = strings.TrimPrefix(l, "## ")
			headings = append(headings, heading)
		case strings.TrimSpace(l) == "<!-- playbook-test":
			pending = &playbookBlock{playbook: heading}
			inDir = true
		case strings.HasPrefix(l, "```"):
			if pending == nil {
				return nil, nil, fmt.Errorf("line %d: a block without a <!-- playbook-test --> comment above it", n)
			}
			if l != "```sh" {
				return nil, nil, fmt.Errorf("line %d: %q: playbook blocks are ```sh", n, l)
			}
			pending.line = n + 1
			inCode = true
		case pending != nil && strings.TrimSpace(l) != "":
			return nil, nil, fmt.Errorf("line %d: text between a playbook-test comment and its block", n)
		}
	}
	if inCode || inDir || pending != nil {
		return nil, nil, fmt.Errorf("unterminated block or comment at the end")
	}
	return blocks, headings, sc.Err()
}

func TestPlaybooks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every playbook end to end (about a minute)")
	}
	requireLinuxRoot(t) // malloc and trim read and call into the test's own process through ptrace
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "playbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, headings, err := parsePlaybooks(string(doc))
	if err != nil {
		t.Fatalf("docs/playbooks.md: %v", err)
	}
	for _, h := range headings {
		found := false
		for _, b := range blocks {
			found = found || b.playbook == h
		}
		if !found {
			t.Errorf("playbook %q has no block to run", h)
		}
	}
	path := filepath.Dir(binary(t)) + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	for _, b := range blocks {
		t.Run(strings.SplitN(b.playbook, ".", 2)[0], func(t *testing.T) {
			if len(b.expects) == 0 {
				t.Fatalf("%s (line %d): no expect: directive, so nothing is checked", b.playbook, b.line)
			}
			env := append(os.Environ(), "PATH="+path)
			for _, need := range b.needs {
				cmd := exec.Command("bash", "-c", need)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Skipf("needs %q: %v %s (scripts/install-test-deps.sh)", need, err, firstLine(string(out)))
				}
			}
			dir := t.TempDir()
			for _, d := range []string{"testdata", "internal"} {
				if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
					t.Fatal(err)
				}
			}
			script := make([]string, len(b.script))
			for i, l := range b.script {
				script[i] = l
				for _, s := range b.skips {
					if strings.Contains(l, s.text) {
						script[i] = ": not run here: " + strconv.Quote(s.reason)
						t.Logf("not run: %s (%s)", strings.TrimSpace(l), s.reason)
					}
				}
			}
			for _, s := range b.skips {
				if !strings.Contains(strings.Join(b.script, "\n"), s.text) {
					t.Errorf("skip %q matches no line of the block", s.text)
				}
			}
			text := strings.Join(script, "\n") + "\n"
			if b.port != "" {
				if !strings.Contains(text, b.port) {
					t.Fatalf("port %s is not in the block", b.port)
				}
				text = regexp.MustCompile(`\b`+regexp.QuoteMeta(b.port)+`\b`).ReplaceAllString(text, strconv.Itoa(freePort(t)))
			}
			out, err := os.Create(filepath.Join(t.TempDir(), "output"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			// A block runs in 10-90 s here; a loaded host may take twice that.
			ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-e", "-c", text)
			cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			// The block's own background processes are in its process
			// group: whatever it leaves running goes with it.
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			runErr := cmd.Wait()
			got, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %.1f s", b.playbook, time.Since(start).Seconds())
			if runErr != nil {
				t.Fatalf("docs/playbooks.md:%d (%s): the block failed: %v\nscript:\n%s\noutput:\n%s", b.line, b.playbook, runErr, text, got)
			}
			for _, re := range b.expects {
				if !re.Match(got) {
					t.Errorf("docs/playbooks.md:%d (%s): output lacks %q\noutput:\n%s", b.line, b.playbook, re, got)
				}
			}
		})
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// TestParsePlaybooks: the directives are read as documented, and a block
// nobody annotated is an error.
func TestParsePlaybooks(t *testing.T) {
	t.Parallel()
	doc := "# x\n\n## 1. One\n\ntext\n\n<!-- playbook-test\nneeds: ruby\nport: 9394\nskip: record | runs forever\nexpect: ^ok$\n-->\n```sh\necho ok\nmemdoctor record\n```\n\n## 2. Two\n"
	blocks, headings, err := parsePlaybooks(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 || len(headings) != 2 {
		t.Fatalf("%d blocks, headings %q", len(blocks), headings)
	}
	b := blocks[0]
	if b.playbook != "1. One" || b.line != 14 || len(b.script) != 2 || b.port != "9394" || len(b.needs) != 1 ||
		len(b.skips) != 1 || b.skips[0].reason != "runs forever" || len(b.expects) != 1 || !b.expects[0].MatchString("a\nok\nb") {
		t.Errorf("block %+v", b)
	}
	for _, bad := range []string{
		"## 1\n```sh\necho\n```\n",
		"## 1\n<!-- playbook-test\nskip: x\n-->\n```sh\necho\n```\n",
		"## 1\n<!-- playbook-test\nexpect: ok\n-->\nprose\n```sh\necho\n```\n",
		"## 1\n<!-- playbook-test\nwhatever: 1\n-->\n```sh\necho\n```\n",
	} {
		if _, _, err := parsePlaybooks(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
