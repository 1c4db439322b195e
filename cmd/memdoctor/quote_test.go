package main

// Names that reach a printed command come from the host, where a local user
// with a delegated cgroup subtree or a process of their own chooses them.
// Pasting a remedy must run what it shows, on exactly that name, and
// nothing the name says.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"html"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// pasted runs command as an operator pasting it would, in the directory
// dir: sh -n must accept it when it holds no <placeholder> (those are for
// the operator to fill in), then sh -c runs it with set -u.
func pasted(t *testing.T, dir, command string) (stdout, stderr string, err error) {
	t.Helper()
	if !strings.Contains(command, "<") {
		if out, err := exec.Command("sh", "-n", "-c", command).CombinedOutput(); err != nil {
			t.Errorf("sh -n rejects %q: %v: %s", command, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", "set -u\n"+command)
	c.Dir = dir
	c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir}
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err = c.Run()
	return o.String(), e.String(), err
}

// noneMade fails the test if running the commands left anything in dir
// (a command substitution hidden in a name makes its file there).
func noneMade(t *testing.T, dir, what string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		t.Errorf("pasting %s made %s in its directory: a name in it ran as shell code", what, e.Name())
	}
}

// hostileCgroup makes parent/name below the memory hierarchy root with a
// limit of limit bytes and a python3 holding 56 MiB in it; all is removed
// when the test ends.
func hostileCgroup(t *testing.T, root string, v2 bool, parent, name string, limit int64) (dir string, pid int) {
	t.Helper()
	top := filepath.Join(root, parent)
	dir = filepath.Join(top, name)
	if err := os.Mkdir(top, 0o755); err != nil {
		t.Skipf("cannot make memory cgroups: %v", err)
	}
	t.Cleanup(func() { removeCgroup(top) })
	if v2 {
		_ = os.WriteFile(filepath.Join(top, "cgroup.subtree_control"), []byte("+memory"), 0)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(dir) })
	limitFile := "memory.limit_in_bytes"
	if v2 {
		limitFile = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		t.Fatal(err)
	}
	// the directory is an argument, never part of the script
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec python3 -c 'import time
b = bytearray(56 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
time.sleep(300)'`, "sh", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if l, err := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		t.Fatalf("the process in %s did not start: %q %v", dir, l, err)
	}
	return dir, cmd.Process.Pid
}

// removeCgroup removes a cgroup directory, waiting for its processes to go.
func removeCgroup(d string) {
	for try := 0; try < 100; try++ {
		if err := os.Remove(d); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPastedRemediesQuoteCgroupNames: a cgroup named job$(touch PWNED),
// under a parent of the test's own, filled near its limit: every command of
// check's findings about it (in --json, in the text report and in the HTML
// report of a capture of the host), pasted into sh in an empty directory,
// makes no file there; the read-only one reads exactly that cgroup's limit
// (a limit no other cgroup has), and the ps one lists its process. A cgroup
// whose name holds an escape sequence, a tab and a direction override (v1
// refuses a newline in a name)
// is named by the placeholder in the commands, which say how to get the
// name, and pasting them makes no file either.
func TestPastedRemediesQuoteCgroupNames(t *testing.T) {
	root, v2 := memoryHierarchy(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	for i, name := range []string{"job$(touch PWNED)", "job\x1b[2J\t$(touch PWNED)\u202e`touch PWNED`"} {
		printable := model.Printable(name)
		parent := fmt.Sprintf("memdoctor-quote-%d-%d", os.Getpid(), i)
		limit := int64(64<<20) + 4096*int64(1+rand.IntN(250))
		_, pid := hostileCgroup(t, root, v2, parent, name, limit)
		cg := "/" + parent + "/" + name

		run := func(where string, commands []string) {
			t.Helper()
			var read, listed, explained bool
			mentioned := 0
			for _, c := range commands {
				explained = explained || c == model.UnprintableHelp
				if !strings.Contains(c, parent) {
					continue
				}
				mentioned++
				if !printable && !strings.Contains(c, model.Unprintable) {
					t.Errorf("%s: %q names cgroup %q without the placeholder", where, c, name)
				}
				dir := t.TempDir()
				stdout, stderr, err := pasted(t, dir, c)
				noneMade(t, dir, where+" "+c)
				switch {
				case !printable:
				case strings.HasPrefix(c, "cat "):
					lines := strings.Split(stdout, "\n")
					if err != nil || len(lines) < 2 || lines[1] != strconv.FormatInt(limit, 10) {
						t.Errorf("%s: %q read %q (%v: %s), want the cgroup's limit %d second", where, c, stdout, err, stderr, limit)
					}
					read = true
				case strings.HasPrefix(c, "ps "):
					if err != nil || !regexp.MustCompile(`(?m)^\s*`+strconv.Itoa(pid)+`\s`).MatchString(stdout) {
						t.Errorf("%s: %q printed %q (%v: %s), want pid %d", where, c, stdout, err, stderr, pid)
					}
					listed = true
				}
			}
			if printable && (!read || !listed) {
				t.Errorf("%s: no command reads %s's files (%v) or lists its processes (%v): %q", where, cg, read, listed, commands)
			}
			if !printable && mentioned > 0 && !explained {
				t.Errorf("%s: the placeholder for %q is not explained: %q", where, name, commands)
			}
			if !printable && mentioned == 0 {
				// a capture leaves out a cgroup whose name it cannot hold
				t.Logf("%s: no command about %q", where, name)
			}
		}

		stdout, stderr, code := runCLI(t, "check", "--json", "--top", "40")
		if code != 0 {
			t.Fatalf("check --json: exit %d: %s", code, stderr)
		}
		r := decodeReport(t, stdout)
		var cmds []string
		for _, f := range r.Findings {
			if f.Subject != "cgroup "+cg {
				continue
			}
			for _, rm := range f.Remedies {
				cmds = append(cmds, rm.Commands...)
				if rm.Undo != "" {
					cmds = append(cmds, rm.Undo)
				}
			}
		}
		if len(cmds) == 0 {
			t.Fatalf("check --json: no finding about %q: %+v", cg, r.Findings)
		}
		run("check --json", cmds)

		stdout, stderr, code = runCLI(t, "check", "--top", "40")
		if code != 0 {
			t.Fatalf("check: exit %d: %s", code, stderr)
		}
		run("check", promptLines(stdout))

		capt := filepath.Join(t.TempDir(), "host.txtar")
		if _, stderr, code := runCLI(t, "capture", "-o", capt); code != 0 {
			t.Fatalf("capture: exit %d: %s", code, stderr)
		}
		page := filepath.Join(t.TempDir(), "report.html")
		if _, stderr, code := runCLI(t, "report", "--from", capt, "-o", page); code != 0 {
			t.Fatalf("report: exit %d: %s", code, stderr)
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		run("report (HTML)", promptLines(html.UnescapeString(string(b))))
	}
}

// promptLines are the commands a text or HTML report shows after "$ ".
func promptLines(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)(?:^\s*|<code>)\$ (.*)$`).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestPastedRemediesQuoteProcessNames: a hoarding process whose name
// (comm) is $(touch X): the allocator_hoarding remedy that names a stats
// file after it, pasted with the operator's command in place of
// <command>, makes no file and sets MEMDOCTOR_STATS to one file in
// /var/log.
func TestPastedRemediesQuoteProcessNames(t *testing.T) {
	bin := buildWorkload(t)
	lib, errOut, code := runCLI(t, "preload", "--print-path")
	if code != 0 {
		t.Fatalf("preload --print-path: %s", errOut)
	}
	lib = strings.TrimSpace(lib)
	dir := t.TempDir()
	const comm = "$(touch X)"
	named := filepath.Join(dir, comm)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(named, b, 0o755); err != nil {
		t.Fatal(err)
	}
	stats := filepath.Join(dir, "stats.%p.jsonl")
	w := startWorkload(t, named, []string{"LD_PRELOAD=" + lib, "MEMDOCTOR_STATS=" + stats, "MEMDOCTOR_STATS_INTERVAL=200ms"}, "hoard", "8", "64", "4")
	if got, _ := os.ReadFile("/proc/" + w.pid() + "/comm"); strings.TrimSpace(string(got)) != comm {
		t.Fatalf("the workload's comm is %q, want %q", got, comm)
	}
	own := filepath.Join(dir, "stats."+w.pid()+".jsonl")
	settled := 0
	if b, err := os.ReadFile(own); err == nil {
		settled = strings.Count(string(b), `"summary"`)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(own); err == nil && strings.Count(string(b), `"summary"`) >= settled+2 {
			break
		}
	}
	r := checkJSON(t, "--top", "40")
	var f *model.Finding
	for i := range r.Findings {
		if r.Findings[i].ID == "allocator_hoarding" && strings.Contains(r.Findings[i].Subject, "(pid "+w.pid()+")") {
			f = &r.Findings[i]
		}
	}
	if f == nil {
		t.Fatalf("allocator_hoarding did not fire on pid %s; findings %+v", w.pid(), r.Findings)
	}
	if !strings.Contains(f.Subject, comm) {
		t.Errorf("the finding's subject %q does not name the process %q", f.Subject, comm)
	}
	var n int
	for _, rm := range f.Remedies {
		for _, c := range rm.Commands {
			if !strings.Contains(c, "MEMDOCTOR_STATS=") {
				continue
			}
			n++
			scratch := t.TempDir()
			stdout, stderr, err := pasted(t, scratch, strings.ReplaceAll(c, "<command>", "printenv MEMDOCTOR_STATS"))
			noneMade(t, scratch, c)
			got := strings.TrimSpace(stdout)
			if err != nil || filepath.Dir(got) != "/var/log" || !strings.HasPrefix(filepath.Base(got), "memdoctor-") || strings.ContainsAny(got, "$()` ") {
				t.Errorf("%q set MEMDOCTOR_STATS=%q (%v: %s), want a file of /var/log without the name's shell code", c, got, err, stderr)
			}
		}
	}
	if n == 0 {
		t.Errorf("no remedy names a stats file: %+v", f.Remedies)
	}
}

// unquoted says where in command c a POSIX shell reads the text outside
// single quotes (bare or in double quotes, where $ and ` still act), and
// comments excluded: the bytes a name from the host may not be in.
func unquoted(c string) []bool {
	out := make([]bool, len(c))
	const (
		bare = iota
		single
		double
	)
	state := bare
	for i := 0; i < len(c); i++ {
		switch state {
		case bare:
			switch {
			case c[i] == '#' && (i == 0 || strings.ContainsRune(" \t;&|(", rune(c[i-1]))):
				return out // a comment to the end
			case c[i] == '\\':
				out[i] = true
				if i+1 < len(c) {
					i++
					out[i] = true
				}
				continue
			case c[i] == '\'':
				state = single
			case c[i] == '"':
				state = double
			}
			out[i] = true
		case single:
			if c[i] == '\'' {
				state = bare
			}
		case double:
			out[i] = true
			switch c[i] {
			case '\\':
				if i+1 < len(c) {
					i++
					out[i] = true
				}
			case '"':
				state = bare
			}
		}
	}
	return out
}

// TestHostileNamesQuoted: check and report on the hostile corpus' capture
// (a cgroup named job$(touch PWNED) near its limit, a process named
// $(touch X)) print commands in which every byte of the names is inside
// single quotes; run by sh as an unprivileged user (uid 65534) in an empty
// directory, those commands make no file there.
func TestHostileNamesQuoted(t *testing.T) {
	capt := filepath.Join(repoRoot(t), "testdata", "hostile", "captures", "hostile-names.txtar")
	const cg, proc = "job$(touch PWNED)", "$(touch X)"
	stdout, stderr, code := runCLI(t, "check", "--json", "--capture", capt)
	if code != 0 {
		t.Fatalf("check --json: exit %d: %s", code, stderr)
	}
	r := decodeReport(t, stdout)
	var fromJSON []string
	for _, f := range r.Findings {
		for _, rm := range f.Remedies {
			fromJSON = append(fromJSON, rm.Commands...)
			if rm.Undo != "" {
				fromJSON = append(fromJSON, rm.Undo)
			}
		}
	}
	text, stderr, code := runCLI(t, "check", "--capture", capt)
	if code != 0 {
		t.Fatalf("check: exit %d: %s", code, stderr)
	}
	page := filepath.Join(t.TempDir(), "r.html")
	if _, stderr, code := runCLI(t, "report", "--from", capt, "-o", page); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []struct {
		where string
		cmds  []string
	}{{"check --json", fromJSON}, {"check", promptLines(text)}, {"report (HTML)", promptLines(html.UnescapeString(string(b)))}} {
		n := 0
		for _, c := range src.cmds {
			if !strings.Contains(c, cg) && !strings.Contains(c, proc) {
				continue
			}
			n++
			bare := unquoted(c)
			for _, name := range []string{cg, proc} {
				for i := 0; ; {
					j := strings.Index(c[i:], name)
					if j < 0 {
						break
					}
					for k := i + j; k < i+j+len(name); k++ {
						if bare[k] {
							t.Errorf("%s: %q has %q outside single quotes (at byte %d)", src.where, c, name, k)
							break
						}
					}
					i += j + len(name)
				}
			}
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			sh := exec.CommandContext(ctx, "sh", "-c", "set -u\n"+c)
			sh.Dir = dir
			sh.Env = []string{"PATH=/usr/bin:/bin"}
			sh.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			_ = sh.Run()
			cancel()
			noneMade(t, dir, src.where+" "+c)
		}
		if n == 0 {
			t.Errorf("%s: no command names %s: %q", src.where, cg, src.cmds)
		}
	}
}
