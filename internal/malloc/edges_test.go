package malloc

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/inject"
)

// Targets killed at random moments of an inspection (before, during the
// attach, during a call): every outcome is a result or "no such process",
// never a hang, and nothing is left behind.
func TestTargetExitsDuringTheWork(t *testing.T) {
	requirePtrace(t)
	bin := build(t, false)
	ctx := context.Background()
	outcomes := map[string]int{}
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 40; i++ {
		cmd := exec.Command(bin, "hoard", "2", "4")
		in, err := cmd.StdinPipe() // it waits for commands, blocked in read
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		_, _ = out.Read(buf) // "ready ...": the threads are done
		pid := cmd.Process.Pid
		delay := time.Duration(rnd.Intn(3000)) * time.Microsecond
		go func() {
			time.Sleep(delay)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}()
		start := time.Now()
		_, err = Inspect(ctx, pid, Options{Method: MethodPtrace, Timeout: 5 * time.Second})
		took := time.Since(start)
		switch {
		case err == nil:
			outcomes["finished"]++
		case errors.Is(err, ErrProcessGone):
			outcomes["gone"]++
		default:
			t.Errorf("killed after %s: %v", delay, err)
		}
		if took > 3*time.Second {
			t.Errorf("killed after %s: the inspection took %s", delay, took)
		}
		_ = in.Close()
		_ = cmd.Wait()
	}
	t.Logf("40 targets killed 0-3 ms into an inspection: %v", outcomes)
	if outcomes["gone"] == 0 {
		t.Errorf("no kill landed during the work: %v", outcomes)
	}
}

func TestZombieAndTraced(t *testing.T) {
	requirePtrace(t)
	ctx := context.Background()
	// A zombie: our own child, exited and not reaped.
	z := exec.Command("true")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	waitState(t, z.Process.Pid, 'Z')
	_, err := Inspect(ctx, z.Process.Pid, Options{})
	if !errors.Is(err, ErrProcessGone) || !strings.Contains(err.Error(), "zombie") {
		t.Errorf("zombie: %v", err)
	}
	_ = z.Wait()

	// A thread already traced (here by memdoctor itself, as a debugger
	// would): refused before anything is touched, and the tracer's work
	// is not disturbed.
	w := startWorkload(t, false, nil, "healthy", "1", "1")
	var second error
	_, err = inject.With(w.pid, w.pid, inject.Options{}, func(*inject.Session) error {
		_, second = Inspect(ctx, w.pid, Options{Method: MethodPtrace})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(second, ErrTraced) {
		t.Errorf("traced: %v", second)
	}
	checkRunning(t, w.pid)
	w.do("info")
}

// A process in its own pid and mount namespace, running a copy of libc.so.6
// from a tmpfs mounted only in its namespace: the host cannot open that
// path, so the library is read through /proc/PID/map_files (or the
// process' root), checked against the inode it mapped.
func TestProcessInItsOwnNamespaces(t *testing.T) {
	requirePtrace(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root (unshare -p -m)")
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	libc := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libc = p
			break
		}
	}
	if libc == "" {
		t.Skip("no libc.so.6 found")
	}
	prog, err := filepath.Abs(filepath.Join("..", "..", "testdata", "programs", "python", "malloc_target.py"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf("mount -t tmpfs memdoctor-test %s && cp %s %s/ && exec env LD_LIBRARY_PATH=%s %s %s 32 1", dir, libc, dir, dir, py, prog)
	cmd := exec.Command("unshare", "-p", "-m", "--fork", "sh", "-c", script)
	w := startCmd(t, cmd)
	if w.ready.PID != 1 {
		t.Errorf("the target sees itself as pid %d, want 1 (its own pid namespace)", w.ready.PID)
	}
	// The host pid: the child of unshare.
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(kids)))
	if err != nil {
		t.Fatalf("children of unshare: %q", kids)
	}
	tg, err := inspectTarget(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tg.libcPath, dir) {
		t.Fatalf("the target maps libc from %s, want the namespace's copy in %s", tg.libcPath, dir)
	}
	if _, err := os.Stat(tg.libcPath); err == nil {
		t.Fatalf("%s is visible from the host: the test does not test what it says", tg.libcPath)
	}
	ctx := context.Background()
	own := w.do("info")
	rep, err := Inspect(ctx, pid, Options{Method: MethodPtrace})
	if err != nil {
		t.Fatal(err)
	}
	if !within(rep.Totals.SystemBytes, own.Arena, 0.01, 64<<10) {
		t.Errorf("system %d, the process' own arena %d", rep.Totals.SystemBytes, own.Arena)
	}
	tr, err := Trim(ctx, pid, Options{Method: MethodPtrace})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pid %d (1 in its namespace), libc %s: system %d, retained %d; trim gave back %d",
		pid, tg.libcPath, rep.Totals.SystemBytes, rep.Totals.RetainedBytes, tr.RSS.Diff)
	if tr.RSS.Diff < rep.Totals.RetainedBytes*8/10 {
		t.Errorf("trim gave back %d of %d", tr.RSS.Diff, rep.Totals.RetainedBytes)
	}
	checkRunning(t, pid)
	w.do("info")
}

// A kernel thread has no address space: it is refused as not glibc, never
// mistaken for a process that exited.
func TestKernelThreadRefused(t *testing.T) {
	flags, ok := procFlags(2)
	if !ok || flags&pfKthread == 0 {
		t.Skip("pid 2 is not kthreadd here (own pid namespace?)")
	}
	_, err := Inspect(context.Background(), 2, Options{})
	if !errors.Is(err, ErrNotGlibc) || !strings.Contains(err.Error(), "kernel thread") {
		t.Errorf("pid 2: %v", err)
	}
	if self, ok := procFlags(os.Getpid()); !ok || self&pfKthread != 0 {
		t.Errorf("own flags %#x, %v: not read, or read as a kernel thread", self, ok)
	}
}

// A process that has begun to exit is told from one that never had glibc:
// its maps may already lack libc while the kernel releases its memory.
func TestExitingIsToldApart(t *testing.T) {
	if exiting(os.Getpid()) {
		t.Error("this test process is read as exiting")
	}
	z := exec.Command("true") // exits, left unreaped: a zombie keeps PF_EXITING
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = z.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for !exiting(z.Process.Pid) {
		if time.Now().After(deadline) {
			flags, ok := procFlags(z.Process.Pid)
			t.Fatalf("exited child %d: flags %#x (read %v), not read as exiting", z.Process.Pid, flags, ok)
		}
		time.Sleep(time.Millisecond)
	}
}
