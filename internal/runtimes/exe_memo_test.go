//go:build linux

package runtimes

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// TestExeMemoHelperProcess is the process TestExeMemo reads: this test
// binary (a Go program) copied away, sleeping until it is killed.
func TestExeMemoHelperProcess(t *testing.T) {
	if os.Getenv("MEMDOCTOR_EXEMEMO_HELPER") != "1" {
		t.Skip("run by TestExeMemo")
	}
	time.Sleep(time.Minute)
}

// startFrom runs exe with args as a child that TestExeMemo kills, and
// waits until its executable is mapped (exec done).
func startFrom(t *testing.T, exe string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "MEMDOCTOR_EXEMEMO_HELPER=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "exe")); err == nil && target == exe {
			return cmd
		}
	}
	t.Fatalf("%s did not start", exe)
	return nil
}

func copyFile(t *testing.T, dst, src string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	// Truncated and written in place: the same inode when dst exists.
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// goReading reads the runtime of pid with memo and returns the Go
// version found ("" when the process is not seen as a Go program).
func goReading(t *testing.T, memo *ExeMemo, pid int) string {
	t.Helper()
	res := Read(context.Background(), procfs.NewFS("/"), Options{PIDs: []int{pid}, NoHostJVMs: true, ExeMemo: memo})
	for _, rd := range res.Readings {
		if rd.PID == pid && rd.Runtime == Go {
			return rd.Version
		}
	}
	return ""
}

// TestExeMemo: the recorder reads a Go executable's build information
// once however many samples see its process; an executable rewritten in
// place (same inode) is read anew; one whose processes are gone is
// forgotten.
func TestExeMemo(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	exe := filepath.Join(t.TempDir(), "prog")
	copyFile(t, exe, self)
	goProc := startFrom(t, exe, "-test.run=^TestExeMemoHelperProcess$")

	memo := &ExeMemo{}
	for i := range 3 {
		if v := goReading(t, memo, goProc.Process.Pid); v != runtime.Version() {
			t.Fatalf("sample %d: Go version %q, want %q", i+1, v, runtime.Version())
		}
	}
	if n := memo.Parses(); n != 1 {
		t.Errorf("three samples of one Go process read its build information %d times, want once", n)
	}
	if n := memo.Len(); n != 1 {
		t.Errorf("memo holds %d executables, want 1", n)
	}

	// The same path and inode, now holding sleep(1): not a Go program.
	_ = goProc.Process.Kill()
	_ = goProc.Wait()
	before, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, exe, sleep)
	if after, err := os.Stat(exe); err != nil || !os.SameFile(before, after) {
		t.Fatalf("the executable was not rewritten in place (%v)", err)
	}
	other := startFrom(t, exe, "60")
	if v := goReading(t, memo, other.Process.Pid); v != "" {
		t.Errorf("an executable rewritten in place as sleep(1) still read as Go %s", v)
	}
	if n := memo.Parses(); n != 2 {
		t.Errorf("build information read %d times after the rewrite, want 2", n)
	}
	// The Go process' executable was forgotten by that reading; once sleep
	// exits too, a reading forgets it as well.
	if n := memo.Len(); n != 1 {
		t.Errorf("memo holds %d executables with one process left, want 1", n)
	}
	_ = other.Process.Kill()
	_ = other.Wait()
	goReading(t, memo, other.Process.Pid)
	if n := memo.Len(); n != 0 {
		t.Errorf("memo holds %d executables after every process exited, want 0", n)
	}
}
