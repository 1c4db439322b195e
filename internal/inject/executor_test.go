//go:build linux && amd64

package inject

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The main goroutine of this test binary is locked to the main thread, so
// that TestMain can start an executor from the main thread itself: the one
// place where ending a locked goroutine does not end its thread.
func init() { runtime.LockOSThread() }

// mainThreadExecutor is what starting an executor loop on the main thread
// gave: its thread, and an error when the loop stayed there.
var mainThreadExecutor struct {
	tid, ran int
	err      error
}

func TestMain(m *testing.M) {
	mainThreadExecutor.err = executorFromMainThread()
	os.Exit(m.Run())
}

func executorFromMainThread() error {
	if unix.Gettid() != unix.Getpid() {
		return fmt.Errorf("TestMain runs on thread %d, not the main thread %d", unix.Gettid(), unix.Getpid())
	}
	e := &executor{reqs: make(chan func()), done: make(chan struct{})}
	ready := make(chan int, 1)
	handed := make(chan struct{})
	go func() {
		select {
		case <-handed:
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "an executor loop started on the main thread kept it (the loop never handed over)")
			os.Exit(2)
		}
	}()
	e.loop(ready) // returns at once only when it handed over to another thread
	close(handed)
	e.tid = <-ready
	e.run(func() { mainThreadExecutor.ran = unix.Gettid() })
	e.stop(true)
	mainThreadExecutor.tid = e.tid
	if _, err := os.Stat(filepath.Join("/proc/self/task", strconv.Itoa(e.tid))); err == nil {
		return fmt.Errorf("thread %d still exists after stop(true)", e.tid)
	}
	return nil
}

// An executor started on the main thread moves to another one: Go parks
// the main thread for good instead of ending it, and a tracer parked for
// good would keep its tracee stopped.
func TestExecutorNeverOnMainThread(t *testing.T) {
	r := mainThreadExecutor
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.tid == os.Getpid() || r.ran != r.tid {
		t.Fatalf("executor thread %d, its function ran on %d, main thread %d", r.tid, r.ran, os.Getpid())
	}
}

// taskState reads a thread's state letter and TracerPid.
func taskState(t *testing.T, pid int) (state byte, tracer int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "State:"); ok {
			state = strings.TrimSpace(v)[0]
		}
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			tracer, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return state, tracer
}

// stop(true) returns only when the kernel has ended the executor's thread,
// and with it the trace: a tracee left in an interrupt stop is free and
// running when stop returns, every time.
func TestLostExecutorFreesTraceeBeforeReturning(t *testing.T) {
	requirePtrace(t)
	pid, _ := startSleep(t)
	for i := 0; i < 30; i++ {
		e := newExecutor()
		var err error
		e.run(func() {
			if err = unix.PtraceSeize(pid); err != nil {
				return
			}
			if err = unix.PtraceInterrupt(pid); err != nil {
				return
			}
			_, ok, werr := waitFor(pid, func() bool { return false })
			if !ok && werr == nil {
				werr = fmt.Errorf("no stop")
			}
			err = werr
		})
		if err != nil {
			e.stop(true)
			t.Fatalf("round %d: %v", i, err)
		}
		if st, tr := taskState(t, pid); st != 't' || tr != e.tid {
			e.stop(true)
			t.Fatalf("round %d: seized thread in state %c traced by %d, want t by the executor's thread %d", i, st, tr, e.tid)
		}
		e.stop(true)
		if st, tr := taskState(t, pid); st == 't' || st == 'T' || tr != 0 {
			t.Fatalf("round %d: after stop(true) the thread is in state %c traced by %d", i, st, tr)
		}
	}
}

// A thread killed right after it stopped for us cannot be read or detached
// any more; it becomes a zombie that only its tracer can release. The
// tracer thread must then end (the kernel releases the zombie), never go
// back to the scheduler still tracing it: the process could then never be
// reaped, and whoever waits for it would wait for ever.
func TestKilledAtStopLeavesNoTracedZombie(t *testing.T) {
	requirePtrace(t)
	cmd := exec.Command("python3", "-c", "import threading, time\n"+
		"threading.Thread(target=time.sleep, args=(60,)).start()\n"+
		"print('ready', flush=True)\ntime.sleep(60)")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	tids, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		t.Fatal(err)
	}
	tid := 0
	for _, d := range tids {
		if n, _ := strconv.Atoi(d.Name()); n != pid {
			tid = n
		}
	}
	if tid == 0 {
		t.Fatalf("pid %d has no second thread", pid)
	}
	testAtStop = func(pid, tid int) {
		_ = unix.Kill(pid, unix.SIGKILL)
		// Until the thread has left the stop: reading it then fails.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if st, _ := taskState(t, tid); st == 'Z' || st == 'X' {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	defer func() { testAtStop = nil }()
	s, err := Attach(pid, tid, Options{Timeout: 5 * time.Second})
	if err == nil {
		_ = s.Detach()
		t.Fatal("attach succeeded on a thread killed at its stop")
	}
	t.Logf("attach: %v", err)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatalf("pid %d could not be reaped: thread %d is a zombie still traced (TracerPid %d)", pid, tid, func() int { _, tr := taskState(t, tid); return tr }())
	}
}
