package main

// check's focus and ranking (--pid, --cgroup, --user, --sort) and per-user
// totals (--users) against smem -u, on processes the test runs under a uid
// of its own.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startAs compiles testdata/programs/NAME.c statically and starts it as uid
// (and gid) uid; it returns the pids of its "ready" line.
func startAs(t *testing.T, name string, uid int) []int {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir, err := os.MkdirTemp("", "memdoctor-focus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the uid runs it from here
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	src := filepath.Join(repoRoot(t), "testdata", "programs", name+".c")
	if out, err := exec.Command("gcc", "-O1", "-static", "-o", bin, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, out)
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) < 2 || f[0] != "ready" {
		t.Fatalf("%s did not become ready: %q %v", name, line, err)
	}
	var pids []int
	for _, x := range f[1:] {
		p, _ := strconv.Atoi(x)
		pids = append(pids, p)
	}
	return pids
}

func TestCheckUsersAgreeWithSmem(t *testing.T) {
	requireLinuxRoot(t)
	if _, err := exec.LookPath("smem"); err != nil {
		t.Skip("smem not installed (scripts/install-test-deps.sh installs it)")
	}
	uid := 40000 + os.Getpid()%20000 // a uid no other process has
	pids := startAs(t, "shared_private", uid)
	parent, child := pids[0], pids[1]

	r := checkJSON(t, "--user", strconv.Itoa(uid), "--users", "--top", "10")
	got := map[int]bool{}
	for _, p := range r.Processes {
		got[p.PID] = true
	}
	if len(got) != 2 || !got[parent] || !got[child] {
		t.Fatalf("--user %d shows pids %v, want exactly %d and %d", uid, got, parent, child)
	}
	if len(r.Users) != 1 || r.Users[0].UID != uid {
		t.Fatalf("--users with --user %d: totals %+v, want one row for uid %d", uid, r.Users, uid)
	}
	mine := r.Users[0]

	out, err := exec.Command("smem", "-u", "-H", "-c", "user count swap uss pss rss").Output()
	if err != nil {
		t.Fatalf("smem -u: %v", err)
	}
	var want []int64
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && f[0] == strconv.Itoa(uid) {
			for _, x := range f[1:] {
				v, _ := strconv.ParseInt(x, 10, 64)
				want = append(want, v)
			}
		}
	}
	if want == nil {
		t.Fatalf("smem -u has no row for uid %d:\n%s", uid, out)
	}
	if mine.Processes != want[0] {
		t.Errorf("processes: memdoctor %d, smem %d", mine.Processes, want[0])
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{{"swap", mine.SwapBytes, want[1] << 10}, {"USS", mine.USSBytes, want[2] << 10}, {"PSS", mine.PSSBytes, want[3] << 10}, {"RSS", mine.RSSBytes, want[4] << 10}} {
		tol := int64(128<<10) + c.want/200 // smem rounds every mapping to kB
		if d := c.got - c.want; d > tol || d < -tol {
			t.Errorf("%s: memdoctor %d, smem %d (diff %d > %d)", c.name, c.got, c.want, d, tol)
		}
	}
	// The shape: the parent's 96 MiB private heap, and the 32 MiB both
	// touch counted once in the user's PSS (half in each process).
	if mine.PSSBytes < 128<<20 || mine.PSSBytes > 134<<20 {
		t.Errorf("PSS total %d, want ≈128 MiB (96 private + 32 shared once)", mine.PSSBytes)
	}
	t.Logf("uid %d: memdoctor %d procs swap/uss/pss/rss %d/%d/%d/%d; smem %v kB", uid, mine.Processes, mine.SwapBytes, mine.USSBytes, mine.PSSBytes, mine.RSSBytes, want)

	// Text: the USERS table names the uid (no passwd entry) with its totals.
	text, _, code := runCLI(t, "check", "--user", strconv.Itoa(uid), "--users")
	if code != 0 || !strings.Contains(text, "USERS (") || !regexpLine(text, fmt.Sprintf(`^\s+%d\s+2\s`, uid)) {
		t.Errorf("check --users text lacks the row of uid %d:\n%s", uid, text)
	}
}

func TestCheckFocusAndSort(t *testing.T) {
	requireLinuxRoot(t)
	uid := 40000 + (os.Getpid()+7)%20000
	pids := startAs(t, "shared_private", uid)
	parent, child := pids[0], pids[1]

	// --pid: only that process, repeatable and comma-separated.
	for _, c := range []struct {
		args []string
		n    int
	}{
		{[]string{"--pid", strconv.Itoa(child)}, 1},
		{[]string{"--pid", fmt.Sprintf("%d,%d", child, parent)}, 2},
		{[]string{"--pid", strconv.Itoa(child), "--pid", strconv.Itoa(parent)}, 2},
	} {
		args, n := c.args, c.n
		r := checkJSON(t, args...)
		var shown []int
		for _, p := range r.Processes {
			shown = append(shown, p.PID)
		}
		if len(shown) != n {
			t.Errorf("%v shows %v, want %d processes", args, shown, n)
		}
		for _, pid := range shown {
			if pid != parent && pid != child {
				t.Errorf("%v shows pid %d", args, pid)
			}
		}
	}

	// --sort: each key ranks the report's processes in falling order.
	for _, key := range []string{"pss", "uss", "rss", "swap"} {
		r := checkJSON(t, "--user", strconv.Itoa(uid), "--sort", key)
		val := func(i int) int64 {
			p := r.Processes[i]
			switch key {
			case "rss":
				return p.RSSBytes
			case "swap":
				return p.SwapBytes
			case "uss":
				return *p.USSBytes
			}
			return *p.PSSBytes
		}
		if len(r.Processes) != 2 {
			t.Fatalf("--user %d --sort %s: %d processes", uid, key, len(r.Processes))
		}
		if val(0) < val(1) {
			t.Errorf("--sort %s: %d before %d", key, val(0), val(1))
		}
	}

	// --cgroup: the test's own processes are in the test's cgroup.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", parent))
	if err != nil {
		t.Fatal(err)
	}
	var cg string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && f[2] != "" {
			cg = f[2]
			break
		}
	}
	r := checkJSON(t, "--cgroup", cg, "--user", strconv.Itoa(uid))
	if len(r.Processes) != 2 {
		t.Errorf("--cgroup %s --user %d: %d processes, want 2", cg, uid, len(r.Processes))
	}

	// Bad values: clear errors, no collection.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pid", "--json"}, `--pid needs a value, but is followed by the flag --json`},
		{[]string{"--pid", "12x"}, `"12x" is not a process id`},
		{[]string{"--pid", "999999999"}, "no such process"},
		{[]string{"--user", "no-such-user-memdoctor"}, "unknown user"},
		{[]string{"--user", "--sort"}, `--user needs a value, but is followed by the flag --sort`},
		{[]string{"--sort", "vss"}, "want one of pss, uss, rss, swap"},
		{[]string{"--cgroup", "/no/such/memdoctor.slice"}, "no such cgroup"},
		{[]string{"--cgroup", "relative"}, "no memory cgroup has this path or name"},
	} {
		_, errOut, code := runCLI(t, append([]string{"check"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("check %v: exit %d, stderr %q; want an error containing %q", c.args, code, errOut, c.want)
		}
	}
}

// regexpLine says whether some line of s matches the pattern.
func regexpLine(s, pattern string) bool {
	return regexp.MustCompile("(?m)" + pattern).MatchString(s)
}
