//go:build linux

package inject

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// executor runs functions on one locked OS thread: the kernel accepts
// ptrace requests for a tracee only from the thread that attached.
type executor struct {
	reqs chan func()
	done chan struct{}
	// tid is the executor's OS thread; never the process' main thread.
	tid int
	// lose, set before close(reqs), ends the OS thread instead of
	// returning it to the scheduler: the kernel then detaches every
	// tracee of that thread.
	lose bool
}

func newExecutor() *executor {
	e := &executor{reqs: make(chan func()), done: make(chan struct{})}
	ready := make(chan int)
	go e.loop(ready)
	e.tid = <-ready
	return e
}

// loop runs on a locked thread other than the main one. Go never ends the
// main thread: a locked goroutine that exits there leaves the thread parked
// for good, and a tracer parked for good holds its tracee stopped. So a
// loop that finds itself on the main thread keeps that thread locked while
// it starts another loop, which therefore lands on another thread.
func (e *executor) loop(ready chan<- int) {
	runtime.LockOSThread()
	tid := unix.Gettid()
	if tid == unix.Getpid() {
		other := make(chan int)
		go e.loop(other)
		ready <- <-other
		runtime.UnlockOSThread()
		return
	}
	ready <- tid
	for f := range e.reqs {
		f()
	}
	close(e.done)
	if !e.lose {
		runtime.UnlockOSThread()
	}
	// Returning with the thread still locked terminates it.
}

func (e *executor) run(f func()) {
	ch := make(chan struct{})
	e.reqs <- func() { f(); close(ch) }
	<-ch
}

// stop ends the executor; lose ends its OS thread (see executor.lose) and
// waits, up to 5 s, until the kernel has ended it, and with it every trace
// the thread held: when stop returns, the tracee is free.
func (e *executor) stop(lose bool) {
	e.lose = lose
	close(e.reqs)
	<-e.done
	if !lose {
		return
	}
	task := procfs.SelfTaskPath(e.tid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// stopKind is what a wait4 status means for a seized thread.
type stopKind int

const (
	stopNone      stopKind = iota
	stopInterrupt          // PTRACE_EVENT_STOP with SIGTRAP: our PTRACE_INTERRUPT
	stopGroup              // PTRACE_EVENT_STOP with a stop signal: job control
	stopSignal             // signal-delivery-stop
	stopOther              // another ptrace event
	stopExited             // the thread exited or was killed
)

const ptraceEventStop = 128

func classify(ws unix.WaitStatus) (stopKind, syscall.Signal) {
	switch {
	case ws.Exited(), ws.Signaled():
		return stopExited, ws.Signal()
	case !ws.Stopped():
		return stopNone, 0
	}
	sig := ws.StopSignal()
	event := int(ws) >> 16
	switch {
	case event == ptraceEventStop && sig == syscall.SIGTRAP:
		return stopInterrupt, sig
	case event == ptraceEventStop:
		return stopGroup, sig
	case event != 0:
		return stopOther, sig
	}
	return stopSignal, sig
}

// waitFor waits for a state change of tid until give() returns true
// (checked between polls); ok is false when it gave up. Polling keeps the
// wait bounded (wait4 cannot time out) and close to the stop: for the
// first 2 ms it yields the CPU between polls (most calls end by then, and
// Go's sleeps are far coarser than a call), then it sleeps, growing to
// 1 ms.
func waitFor(tid int, give func() bool) (ws unix.WaitStatus, ok bool, err error) {
	const spin = 2 * time.Millisecond
	start := time.Now()
	sleep := 50 * time.Microsecond
	for i := 0; ; i++ {
		pid, err := unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return ws, false, err
		case pid == tid:
			return ws, true, nil
		}
		if give() {
			return ws, false, nil
		}
		if i < 64 || time.Since(start) < spin {
			_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			continue
		}
		time.Sleep(sleep)
		sleep = min(sleep*2, time.Millisecond)
	}
}

// memFile opens /proc/PID/mem for reading and writing the stopped thread's
// memory (allowed to the tracer).
func memFile(pid int) (*os.File, error) {
	return procfs.OpenMem(pid, os.O_RDWR)
}

// ThreadSyscall reads /proc/PID/task/TID/syscall: the system call number a
// blocked thread is in, -1 when it runs in user mode ("running" or no
// call), and whether the file could be read.
func ThreadSyscall(pid, tid int) (nr int, ok bool) {
	sc, err := procfs.Live().TaskSyscall(pid, tid)
	if err != nil {
		return -1, false
	}
	return sc.Nr, true
}

// Exited reports whether thread tid of pid has exited or is exiting. An
// exiting thread (the kernel refuses to trace it, EPERM) becomes a zombie
// or vanishes within moments, so it is watched for up to wait.
func Exited(pid, tid int, wait time.Duration) bool {
	fs := procfs.Live()
	deadline := time.Now().Add(wait)
	for {
		st, err := fs.TaskStat(pid, tid)
		if err != nil && !errors.Is(err, procfs.ErrMalformed) {
			return procfs.IsNotExist(err)
		}
		if err == nil && (st.State == 'Z' || st.State == 'X') {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ptraceError turns a ptrace errno into an error that says what to do.
func ptraceError(op string, pid, tid int, err error) error {
	switch {
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w: thread %d of pid %d (%s: it exited)", ErrProcessGone, tid, pid, op)
	case errors.Is(err, unix.EPERM) && Exited(pid, tid, 50*time.Millisecond):
		return fmt.Errorf("%w: thread %d of pid %d (%s: it was exiting)", ErrProcessGone, tid, pid, op)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w: %s thread %d of pid %d: %s", ErrPtraceDenied, op, tid, pid, PtraceHint())
	}
	return fmt.Errorf("%s thread %d of pid %d: %w", op, tid, pid, err)
}

// PtraceHint says why ptrace may be refused on this host.
func PtraceHint() string {
	hints := []string{}
	if v, err := procfs.Live().Sysctl("kernel/yama/ptrace_scope"); err == nil {
		switch v {
		case "1":
			hints = append(hints, "kernel.yama.ptrace_scope=1 lets a process trace only its descendants: run memdoctor as root (CAP_SYS_PTRACE)")
		case "2":
			hints = append(hints, "kernel.yama.ptrace_scope=2: only root (CAP_SYS_PTRACE) may attach")
		case "3":
			hints = append(hints, "kernel.yama.ptrace_scope=3: attaching is disabled until reboot")
		}
	}
	hints = append(hints, "in a container memdoctor needs CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE) and a seccomp profile that allows ptrace",
		"a process that made itself undumpable (prctl PR_SET_DUMPABLE 0) can only be traced by root")
	return strings.Join(hints, "; ")
}
