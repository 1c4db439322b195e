package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// startHeapHold runs testdata/programs/java/HeapHold.java with the given
// JVM flags until the test ends and waits for its "ready".
func startHeapHold(t *testing.T, dir string, flags []string, args ...string) (*exec.Cmd, time.Time) {
	t.Helper()
	cmd := exec.Command("java", append(append(flags, "-cp", dir, "HeapHold"), args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("java: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("java %v HeapHold %v did not say ready", flags, args)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("java %v HeapHold %v not ready after 60 s", flags, args)
	}
	return cmd, start
}

// TestJVMFreshHeapNotSlack: a JVM with the default heap settings commits its
// initial heap (1/64 of RAM) without touching it. Idle 15 s after start, or
// a short-lived command-line JVM, it must not be called wasteful for that;
// a JVM whose big heap is really resident and nearly empty after full
// collections still is. All three are read from hsperfdata, with no flag.
func TestJVMFreshHeapNotSlack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three JVMs, one with a 512 MiB pre-touched heap, for ~20 s")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("javac missing: apt-get install openjdk-17-jdk-headless (scripts/install-test-deps.sh)")
	}
	dir := t.TempDir()
	src := filepath.Join(repoRoot(t), "testdata", "programs", "java", "HeapHold.java")
	if out, err := exec.Command("javac", "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	binary(t) // built before the JVMs start, so that they are read young
	// 14 MiB live, as in the report that a fresh JVM held "378 MiB of heap
	// for 14.0 MiB live".
	idle, idleStart := startHeapHold(t, dir, nil, "14", "0", "600")
	held, _ := startHeapHold(t, dir, []string{"-Xms512m", "-XX:+AlwaysPreTouch"}, "14", "2", "600")
	short, _ := startHeapHold(t, dir, nil, "14", "0", "12")

	// The short-lived JVM is read a second or two after start.
	early := runCheck(t, "--gc-interval", "3s")
	time.Sleep(time.Until(idleStart.Add(15 * time.Second)))
	late := runCheck(t, "--gc-interval", "3s")

	for _, c := range []struct {
		name string
		pid  int
		rep  *model.Report
	}{{"short-lived JVM", short.Process.Pid, early}, {"idle JVM 15 s after start", idle.Process.Pid, late}} {
		rt := runtimeOf(t, c.rep, fmt.Sprintf("pid/%d", c.pid))
		if rt.HeapCommittedBytes == nil || rt.HeapLiveBytes == nil || rt.ResidentBytes == nil {
			t.Fatalf("%s: heap not read from hsperfdata: %+v", c.name, rt)
		}
		t.Logf("%s: committed %.0f MiB, live %.1f MiB, resident %.0f MiB, up %.1f s", c.name,
			*rt.HeapCommittedBytes/(1<<20), *rt.HeapLiveBytes/(1<<20), *rt.ResidentBytes/(1<<20), rt.UptimeSeconds)
		// The case in point: far more committed than live.
		if *rt.HeapCommittedBytes < 2**rt.HeapLiveBytes+64<<20 || *rt.HeapLiveBytes < 8<<20 {
			t.Fatalf("%s is not the fresh JVM this test is about: committed %v, live %v", c.name, *rt.HeapCommittedBytes, *rt.HeapLiveBytes)
		}
		if f := findingsAbout(c.rep, fmt.Sprintf("(pid %d)", c.pid))["gc_heap_slack"]; f != nil {
			t.Errorf("gc_heap_slack fired for the %s: %s", c.name, f.Summary)
		}
	}

	who := fmt.Sprintf("(pid %d)", held.Process.Pid)
	for i, r := range []*model.Report{early, late} {
		f := findingsAbout(r, who)["gc_heap_slack"]
		if f == nil {
			t.Errorf("check %d: gc_heap_slack did not fire for the JVM holding a resident 512 MiB heap for 14 MiB live %s: %+v",
				i+1, who, runtimeOf(t, r, fmt.Sprintf("pid/%d", held.Process.Pid)))
			continue
		}
		live, _ := evidence(f, "heap_live_bytes")
		slack, _ := evidence(f, "slack_bytes")
		t.Logf("check %d: %s", i+1, f.Summary)
		between(t, "live heap of the pre-touched JVM", live, 14<<20, 64<<20)
		between(t, "slack of the pre-touched JVM", slack, 400<<20, 512<<20)
	}
}
