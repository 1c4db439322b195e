package main

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
	"time"
)

// vmstatOOMKill reads the host's oom_kill counter.
func vmstatOOMKill(t *testing.T) float64 {
	t.Helper()
	f, err := os.Open("/proc/vmstat")
	if err != nil {
		t.Skipf("no /proc/vmstat: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("this kernel has no oom_kill in /proc/vmstat (before 4.13)")
	return 0
}

// oomKillInCgroup makes a real OOM kill: a memory cgroup of the test's own
// with a 32 MiB limit, and a Python allocator in it that touches memory
// until the kernel kills it. The cgroup is removed afterwards.
func oomKillInCgroup(t *testing.T) string {
	t.Helper()
	root, v2 := memoryHierarchy(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the allocator")
	}
	dir := filepath.Join(root, fmt.Sprintf("memdoctor_oom_%d_%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for try := 0; try < 100; try++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("cgroup %s not removed", dir)
	}()
	limit := []byte(strconv.Itoa(32 << 20))
	if v2 {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), limit, 0); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
	} else {
		if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), limit, 0); err != nil {
			t.Fatal(err)
		}
		// With swap accounting, hold swap to the same limit.
		_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), limit, 0)
	}
	// Touches 1 MiB at a time, up to 1 GiB: far past the limit.
	alloc := `b = [b"x" * (1 << 20) for i in range(1024)]; print("survived")`
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec python3 -c '%s'", dir, alloc)
	cmd := exec.Command("/bin/sh", "-c", script)
	out, err := cmd.CombinedOutput()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the allocator was not OOM-killed: %v %s", err, out)
	}
	return "/" + filepath.Base(dir)
}

// TestOOMKillIsAFinding makes a real OOM kill in a memory cgroup and shows
// that check reports it with the count since boot, and that a recording
// during which it happens says so with when.
//
// A kill raises the host's counter for the rest of its boot; check judges
// the counter since boot (that is what a snapshot has), while recordings
// judge only increases within their own range, so healthy recordings taken
// by other tests stay healthy.
func TestOOMKillIsAFinding(t *testing.T) {
	requireLinuxRoot(t)
	before := vmstatOOMKill(t)

	db := filepath.Join(t.TempDir(), "oom.db")
	r := startRecorder(t, db, 500*time.Millisecond)
	time.Sleep(2 * time.Second)
	killedAfter := time.Now()
	oomKillInCgroup(t)
	killedBy := time.Now()
	after := vmstatOOMKill(t)
	if after < before+1 {
		t.Fatalf("oom_kill went %v → %v across the kill", before, after)
	}
	time.Sleep(2 * time.Second)
	r.stop(t)

	rep := checkJSON(t)
	f := finding(rep, "oom_kills")
	if f == nil {
		t.Fatalf("check: oom_kills did not fire with oom_kill %v; findings %+v", after, rep.Findings)
	}
	n, ok := evidence(f, "oom_kills_since_boot")
	if !ok || n < after || n > vmstatOOMKill(t) {
		t.Errorf("oom_kills_since_boot = %v, want the host's counter (%v after the kill)", n, after)
	}
	if f.Severity != "warning" || len(f.Remedies) < 2 {
		t.Errorf("finding %+v", f)
	}
	// This host has a v1 or v2 memory hierarchy: the cgroup remedy reads
	// that layout's files only.
	_, v2 := memoryHierarchy(t)
	cmds := ""
	for _, rem := range f.Remedies {
		cmds += strings.Join(rem.Commands, "\n") + "\n"
	}
	if v2 == strings.Contains(cmds, "memory.limit_in_bytes") || !v2 == regexp.MustCompile(`memory\.max[" ]`).MatchString(cmds) {
		t.Errorf("cgroup remedy does not fit this host's layout (v2=%v):\n%s", v2, cmds)
	}
	out, _, _ := runCLI(t, "check")
	if !strings.Contains(out, "oom_kills") || strings.Contains(out, "ok: no problems") {
		t.Errorf("text report does not show the kill as a finding:\n%s", out)
	}

	rec := diagnoseJSON(t, db)
	g := finding(rec, "oom_kills")
	if g == nil {
		t.Fatalf("diagnose: oom_kills did not fire on a recording during which a process was killed; findings %+v notes %+v", rec.Findings, rec.Notes)
	}
	if n, ok := evidence(g, "oom_kills_in_range"); !ok || n < 1 || n > after-before+vmstatOOMKill(t)-after {
		t.Errorf("oom_kills_in_range = %v, want the kills during the recording (%v)", n, after-before)
	}
	var first, last time.Time
	for _, e := range g.Evidence {
		switch e.Name {
		case "first_kill_after":
			first, _ = time.Parse(time.RFC3339, e.Text)
		case "last_kill_by":
			last, _ = time.Parse(time.RFC3339, e.Text)
		}
	}
	// The kill lies between the samples around it: at most one interval
	// (and the second the RFC 3339 stamp drops) either side.
	slack := 1500 * time.Millisecond
	if first.IsZero() || last.IsZero() || first.After(killedBy) || last.Add(time.Second).Before(killedAfter) ||
		killedAfter.Sub(first) > slack || last.Sub(killedBy) > slack {
		t.Errorf("kill placed in [%v, %v], it happened in [%v, %v]", first, last, killedAfter, killedBy)
	}
}

// TestOOMKillCheckNamesKernelLogVictim makes a real kill in a cgroup of its
// own, then shows that check names the victim the kernel log (dmesg) names,
// with the test's cgroup and its 32 MiB limit. The log is only read.
func TestOOMKillCheckNamesKernelLogVictim(t *testing.T) {
	requireLinuxRoot(t)
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		t.Skip("no /dev/kmsg:", err)
	}
	cg := oomKillInCgroup(t)
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		t.Skip("no dmesg:", err)
	}
	var pid, comm string
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "oom-kill:"); i >= 0 && strings.Contains(l, "oom_memcg="+cg+",") {
			for _, kv := range strings.Split(l[i+len("oom-kill:"):], ",") {
				if v, ok := strings.CutPrefix(kv, "pid="); ok {
					pid = v
				}
				if v, ok := strings.CutPrefix(kv, "task="); ok {
					comm = v
				}
			}
		}
	}
	if pid == "" {
		t.Fatalf("dmesg does not name the kill in %s", cg)
	}
	rep := checkJSON(t)
	f := finding(rep, "oom_kills")
	if f == nil {
		t.Fatalf("oom_kills did not fire; findings %+v", rep.Findings)
	}
	ev := map[string]string{}
	for _, e := range f.Evidence {
		ev[e.Name] = e.Text
	}
	victim := comm + " (pid " + pid + ")"
	if ev["kmsg_kill_1_victim"] != victim || ev["kmsg_kill_1_cgroup"] != cg {
		t.Errorf("newest kill %q in %q, dmesg says %q in %s; evidence %+v", ev["kmsg_kill_1_victim"], ev["kmsg_kill_1_cgroup"], victim, cg, f.Evidence)
	}
	if lim, ok := evidence(f, "kmsg_kill_1_cgroup_limit_bytes"); !ok || lim != 32<<20 {
		t.Errorf("limit %v, want 32 MiB", lim)
	}
	if rss, ok := evidence(f, "kmsg_kill_1_rss_bytes"); !ok || rss <= 0 || rss > 64<<20 {
		t.Errorf("victim RSS %v", rss)
	}
	if !strings.Contains(f.Summary, victim) || !strings.Contains(f.Summary, "cgroup "+cg+" at its limit 32") {
		t.Errorf("summary %q", f.Summary)
	}
	t.Logf("%s", f.Summary)
}
