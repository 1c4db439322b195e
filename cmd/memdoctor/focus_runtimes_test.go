package main

// check --pid shows the runtimes and runtime findings of the focused
// processes only: a JVM elsewhere on the host (found through its
// hsperfdata) is left out, as the focus note says.

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

func TestFocusPIDHidesOtherRuntimes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JVM for ~15 s")
	}
	dir := compileGcWorkload(t)
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	jvm := startService(t, url, "java", "-XX:+UseG1GC", "-Xmx160m", "-cp", dir, "GcWorkload", "churn", strconv.Itoa(port))
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	time.Sleep(3 * time.Second)

	// Unfocused, the JVM is found through its hsperfdata.
	all := runCheck(t, "--gc-interval", "2s")
	seen := false
	for _, r := range all.Runtimes {
		seen = seen || r.PID == jvm.Process.Pid
	}
	if !seen {
		t.Fatalf("check without --pid did not read the JVM (pid %d): %+v", jvm.Process.Pid, all.Runtimes)
	}

	focused := other.Process.Pid
	rep := runCheck(t, "--pid", strconv.Itoa(focused), "--gc-interval", "2s")
	for _, r := range rep.Runtimes {
		if r.PID != 0 && r.PID != focused {
			t.Errorf("check --pid %d lists the runtime of pid %d (%s %s)", focused, r.PID, r.Runtime, r.Target)
		}
	}
	pidIn := regexp.MustCompile(`\(pid (\d+)\)`)
	for _, f := range rep.Findings {
		if m := pidIn.FindStringSubmatch(f.Subject); m != nil && m[1] != strconv.Itoa(focused) {
			t.Errorf("check --pid %d reports %s about %s", focused, f.ID, f.Subject)
		}
	}
}
