package preload

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// profsafeArgs: 2 threads allocating and freeing with every interposed
// function (1,000,000 checked allocations each, then on until the forks end),
// forks and execs shared by profsafeForkers threads; with a static helper,
// every profsafeEvery-th child execs /bin/true (dynamic: it loads the
// library and writes its own profile) and the others the helper.
const (
	profsafeForks   = 10000
	profsafeForkers = 4
	profsafeEvery   = 50
	// profsafeDeadline: about 15 s each on 2 shared cores; a run still
	// going after this is taken for a deadlock.
	profsafeDeadline = 3 * time.Minute
)

// runProfsafe runs test/profsafe.c (see there) in a process group of its
// own and returns its output, wall time and pid. If it has not ended by
// profsafeDeadline, the test fails with the state of every thread of the
// group (the program and any child it forked): state, wait channel and
// kernel stack; the group is killed either way.
func runProfsafe(t *testing.T, bin, helper string, env ...string) (string, time.Duration, int) {
	t.Helper()
	args := []string{"2", strconv.Itoa(profsafeForks), "1000000", strconv.Itoa(profsafeForkers)}
	if helper != "" {
		args = append(args, helper, strconv.Itoa(profsafeEvery))
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Whatever happens, nothing of the group outlives the test (forked
	// children included).
	defer syscall.Kill(-pgid, syscall.SIGKILL)
	timer := time.NewTimer(profsafeDeadline)
	defer timer.Stop()
	select {
	case err := <-done:
		took := time.Since(start)
		if err != nil {
			t.Fatalf("profsafe %v: %v\n%s%s", env, err, stdout.Bytes(), stderr.Bytes())
		}
		if stderr.Len() > 0 {
			t.Fatalf("profsafe %v wrote on stderr:\n%s", env, stderr.Bytes())
		}
		return stdout.String(), took, pgid
	case <-timer.C:
		threads := groupThreads(pgid)
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		t.Fatalf("deadlock: profsafe %v (pid %d) still running after %s (killed); its threads and children:\n%s\nits output so far:\n%s%s",
			env, pgid, profsafeDeadline, threads, stdout.Bytes(), stderr.Bytes())
	}
	return "", 0, 0
}

// groupThreads describes every thread of every process in process group
// pgid: pid, tid, name, state, wait channel and, where readable (root),
// the kernel stack.
func groupThreads(pgid int) string {
	var b strings.Builder
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		fmt.Fprintf(&b, "process %s (ppid %s):\n", filepath.Base(p), f[1])
		tasks, _ := filepath.Glob(filepath.Join(p, "task", "[0-9]*"))
		for _, task := range tasks {
			read := func(name string) string {
				s, err := os.ReadFile(filepath.Join(task, name))
				if err != nil {
					return "?"
				}
				return strings.TrimSpace(string(s))
			}
			state := "?"
			if s := read("stat"); s != "?" {
				if j := strings.LastIndexByte(s, ')'); j >= 0 {
					if g := strings.Fields(s[j+1:]); len(g) > 0 {
						state = g[0]
					}
				}
			}
			fmt.Fprintf(&b, "  tid %s %q state %s wchan %s\n", filepath.Base(task), read("comm"), state, read("wchan"))
			if st := read("stack"); st != "?" && st != "" {
				for _, line := range strings.Split(st, "\n") {
					fmt.Fprintf(&b, "      %s\n", line)
				}
			}
		}
	}
	if b.Len() == 0 {
		return "(no process left in the group)"
	}
	return b.String()
}

// With sampling on (every 4 KiB, far more often than in use), a
// multi-threaded program in which 4 threads fork and exec 10,000 times in
// all while 2 threads allocate and free, and which takes signals and
// dlopens, prints exactly what it prints without the library, and never
// hangs. Every child that execs /bin/true under the library writes its own
// profile.
func TestProfileForkExecSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 10,000 fork+exec, twice, take about 30 s")
	}
	cc := needCC(t)
	dir := t.TempDir()
	lib, err := Build(context.Background(), BuildOptions{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "profsafe")
	if out, err := exec.Command(cc, "-O2", "-pthread", "-o", bin, "test/profsafe.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("building profsafe: %v\n%s", err, out)
	}
	// A static program that exits at once: exec'ing it costs neither the
	// dynamic loader nor the library (a dynamic child with sampling on
	// costs 1-1.5 ms more: loading, its thread, its profile at exit).
	helper := filepath.Join(dir, "exit0")
	if err := os.WriteFile(helper+".c", []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O2", "-static", "-o", helper, helper+".c").CombinedOutput(); err != nil {
		t.Logf("no static helper (%v: %s): every child execs /bin/true", err, bytes.TrimSpace(out))
		helper = ""
	}
	want, base, _ := runProfsafe(t, bin, helper)
	dumps := filepath.Join(dir, "dumps")
	if err := os.Mkdir(dumps, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pids")
	got, took, parent := runProfsafe(t, bin, helper, "LD_PRELOAD="+lib, "MEMDOCTOR_PROFILE=4KiB",
		"MEMDOCTOR_PROFILE_PATH="+filepath.Join(dumps, "heap.%p"), "PROFSAFE_PIDS="+pidFile)
	if got != want {
		t.Fatalf("output under the library:\n%s\nwithout:\n%s", got, want)
	}
	if !strings.Contains(got, fmt.Sprintf("forks: %d of %d exec'd and exited 0\n", profsafeForks, profsafeForks)) {
		t.Fatalf("not every child exec'd and exited 0:\n%s", got)
	}
	// The parent and each child that exec'd /bin/true write one profile at
	// exit, named by pid (10,000 forks wrap a pid_max of 32,768: a pid
	// may have served two such children, which left one file).
	pids, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := map[string]bool{"heap." + strconv.Itoa(parent): true}
	for _, p := range strings.Fields(string(pids)) {
		wantFiles["heap."+p] = true
	}
	dynamic := len(strings.Fields(string(pids)))
	entries, err := os.ReadDir(dumps)
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, e := range entries {
		if !wantFiles[e.Name()] {
			extra = append(extra, e.Name())
		}
		delete(wantFiles, e.Name())
	}
	var missing []string
	for name := range wantFiles {
		missing = append(missing, name)
	}
	sort.Strings(missing)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("profiles: missing %v; not of the parent (pid %d) nor of a child that exec'd /bin/true: %v", missing, parent, extra)
	}
	t.Logf("%d fork+exec from %d threads (%d of them of /bin/true under the library): %s with sampling, %s without the library",
		profsafeForks, profsafeForkers, dynamic, took.Round(time.Millisecond), base.Round(time.Millisecond))
}
