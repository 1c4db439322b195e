package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// SIGINT during the GC interval ends it early: check exits 0 with the
// report of what it read, the runtime's recent rates over the seconds
// waited. (Its handler is installed when the wait begins, not at start:
// interruptibleContext.) A Go program serving its /metrics
// (node_exporter) is the runtime with GC data.
func TestCheckSIGINTEndsGCInterval(t *testing.T) {
	requireLinuxRoot(t)
	ne, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		t.Skip("needs prometheus-node-exporter (scripts/install-test-deps.sh installs it)")
	}
	port := freePort(t)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
	svc := startService(t, url, ne, "--collector.disable-defaults", "--collector.meminfo",
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
	rep := signalInGCInterval(t, svc.Process.Pid, os.Interrupt, 3*time.Second)
	rt := runtimeOf(t, rep, url)
	if rt.Recent == nil || rt.Recent.Seconds < 2 || rt.Recent.Seconds > 30 {
		t.Errorf("node_exporter's runtime after SIGINT: recent %+v, want the seconds waited", rt.Recent)
	}
}

// signalInGCInterval runs check --json on pid with a GC interval of 60 s,
// sends it sig after wait (check then waits out its interval), and
// returns the report check made of what it read: it must end at once,
// with status 0.
func signalInGCInterval(t *testing.T, pid int, sig os.Signal, wait time.Duration) *model.Report {
	t.Helper()
	cmd := exec.Command(binary(t), "check", "--json", "--top", "3", "--gc-interval", "60s", "--pid", strconv.Itoa(pid))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(wait)
	start := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("check after %v: %v (a signal in the GC interval must end the wait, not check)", sig, err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("check still runs 20 s after %v (its GC interval is 60 s)", sig)
	}
	t.Logf("check ended %v after %v", time.Since(start), sig)
	var rep model.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("check --json after %v: %v\n%.2000s", sig, err, out.String())
	}
	return &rep
}
