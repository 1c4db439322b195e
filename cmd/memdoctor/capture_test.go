package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureAndReplay captures this host, checks the archive keeps no
// secret of a running process (its arguments and environment), and replays
// it with check.
func TestCaptureAndReplay(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	const secret = "hunter2-memdoctor-secret"
	sleeper := exec.Command("/bin/sh", "-c", "exec sleep 60", "--password="+secret)
	sleeper.Env = append(os.Environ(), "API_TOKEN="+secret)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })

	for _, extra := range [][]string{nil, {"--no-redact"}} {
		out := filepath.Join(t.TempDir(), "host.txtar")
		args := append([]string{"capture", "--top", "200", "-o", out, "--note", "test"}, extra...)
		_, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("capture %v: exit %d: %s", extra, code, errOut)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("capture %v holds a process' secret argument or environment", extra)
		}
		for _, want := range []string{"memdoctor capture v1\n", "\nkernel: ", "\npagesize: ", "\ncgroup: ", "\ntime: ", "\nnote: test\n", "-- proc/meminfo --", "-- proc/zoneinfo --"} {
			if !bytes.Contains(data, []byte(want)) {
				t.Errorf("capture lacks %q", want)
			}
		}
		if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("capture mode %v, want 0600", st.Mode().Perm())
		}
		r := checkJSON(t, "--capture", out)
		if r.Accounting.TotalBytes == 0 || len(r.Zones) == 0 || !strings.HasPrefix(r.Info.Source, "capture ") {
			t.Errorf("replay of the capture is incomplete: %+v", r.Info)
		}
	}
}
