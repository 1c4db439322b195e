package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// Every command that writes a file leaves a device node a device: copies of
// /dev/full and /dev/null made in the test's own directory (the host's are
// never touched). Before, `capture -o /dev/full` replaced the node with a
// regular file and said "wrote /dev/full".
func TestOutputNeverReplacesDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	dir := t.TempDir()
	if _, errOut, code := runCLI(t, "capture", "-o", filepath.Join(dir, "c.txtar")); code != 0 {
		t.Fatalf("capture: %s", errOut)
	}
	for _, c := range []struct {
		args []string
	}{
		{[]string{"capture", "-o"}},
		{[]string{"report", "--from", filepath.Join(dir, "c.txtar"), "-o"}},
	} {
		full, null := filepath.Join(dir, "full"), filepath.Join(dir, "null")
		_ = os.Remove(full)
		_ = os.Remove(null)
		if err := unix.Mknod(full, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 7))); err != nil {
			t.Skipf("mknod: %v", err)
		}
		if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Skipf("mknod: %v", err)
		}
		_, errOut, code := runCLI(t, append(c.args, full)...)
		if code == 0 || !strings.Contains(errOut, "no space left on device") {
			t.Errorf("%v full: exit %d, %q", c.args, code, errOut)
		}
		if _, errOut, code := runCLI(t, append(c.args, null)...); code != 0 {
			t.Errorf("%v null: exit %d, %q", c.args, code, errOut)
		}
		for _, p := range []string{full, null} {
			if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
				t.Errorf("%v: %s is no longer a character device: %v %v", c.args, p, fi.Mode(), err)
			}
		}
	}
}
