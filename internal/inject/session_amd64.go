//go:build linux && amd64

package inject

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Supported reports whether this build can call into processes.
const Supported = true

// testBreak makes Detach skip part of the restore, so the tests can show
// that the canary sees it: "xstate" (the extended state is not written
// back) or "restart" (orig_rax is lost). Never set outside tests.
var testBreak string

// testAtStop, when set, runs when attach has the thread stopped, before
// anything is read: the tests kill the process there. Never set outside
// tests.
var testAtStop func(pid, tid int)

// Register-set notes (include/uapi/linux/elf.h).
const (
	ntPRFPREG   = 2     // user_fpregs_struct: x87 and SSE, 512 bytes
	ntX86XSTATE = 0x202 // the XSAVE area, standard format
)

// redZone is the area below rsp a leaf function may use without moving
// rsp (System V AMD64 ABI); the frame goes below it, with some spare.
const redZone = 128 + 128

// user64CS is the code segment selector of 64-bit user mode.
const user64CS = 0x33

// faultSignals are left unblocked during a call (see the package notes).
var faultSignals = []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGILL, syscall.SIGFPE, syscall.SIGTRAP, syscall.SIGSYS}

func callMask() uint64 {
	m := ^uint64(0)
	for _, s := range faultSignals {
		m &^= 1 << (uint(s) - 1)
	}
	return m
}

// Stop describes where the thread was stopped.
type Stop struct {
	PC, SP uint64
	// Syscall is the system call the thread was in (or had just made),
	// -1 in user mode.
	Syscall int
	// Restart is true when the call was interrupted and the kernel will
	// restart it (rax holds -ERESTART*).
	Restart bool
}

// Session is one thread of a process, seized and stopped.
type Session struct {
	pid, tid int
	opt      Options
	ex       *executor
	mem      *os.File
	deadline time.Time

	saved   unix.PtraceRegs
	xstate  []byte
	xnote   int
	mask    uint64
	maskSet bool // the call mask is in place
	dirty   bool // registers changed: restore before detaching
	gone    bool // the thread exited
	// traced: the tracer thread may still trace the thread. Set by the
	// seize, cleared only by a detach the kernel accepted or by reaping
	// the thread's exit. While it is set, the tracer thread must end
	// rather than go back to the scheduler: the kernel then detaches the
	// thread (or releases its zombie), whatever state it is in.
	traced   bool
	closed   bool
	winding  bool // WindDown: cleanup calls may run a little past the deadline
	onTracer bool // inside Run: already on the tracer thread

	deferred []syscall.Signal
	stopped  time.Time
	sandbox  sandbox // the thread's seccomp state, from its status
	proved   int     // how many seccomp filters were proven to allow the calls
	refused  error   // set when the filters were not proven after a Reposition: no call is made

	// Calls lists the calls made, with their durations.
	Calls []Call
	// Held is how long the thread was stopped or in calls, attach to
	// detach (set by Detach).
	Held time.Duration
}

// With attaches to thread tid of process pid, runs fn with the thread
// stopped, and puts the thread back, all on the tracer thread: no hop
// between threads while the thread is held. The returned Session (nil when
// the attach failed) carries Calls and Held.
func With(pid, tid int, opt Options, fn func(*Session) error) (*Session, error) {
	opt = opt.withDefaults()
	sb, err := preflight(pid, tid, opt)
	if err != nil {
		return nil, err
	}
	mem, err := openMem(pid)
	if err != nil {
		return nil, err
	}
	s := &Session{pid: pid, tid: tid, opt: opt, ex: newExecutor(), mem: mem, deadline: time.Now().Add(opt.Timeout), sandbox: sb}
	var (
		ferr, derr error
		attached   bool
	)
	s.ex.run(func() {
		if err = s.attach(); err != nil {
			return
		}
		attached = true
		s.onTracer = true
		ferr = fn(s)
		s.onTracer = false
		s.closed = true
		derr = s.detach()
		s.Held = time.Since(s.stopped)
	})
	s.ex.stop(s.traced)
	_ = mem.Close() // nothing buffered
	if !attached {
		return nil, err
	}
	for _, sig := range s.deferred {
		_ = syscall.Kill(s.pid, sig)
	}
	if ferr != nil {
		return s, ferr
	}
	return s, derr
}

func openMem(pid int) (*os.File, error) {
	mem, err := memFile(pid)
	if err != nil {
		if os.IsNotExist(err) || errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
		}
		if os.IsPermission(err) {
			return nil, fmt.Errorf("%w: opening /proc/%d/mem: %s", ErrPtraceDenied, pid, PtraceHint())
		}
		return nil, err
	}
	return mem, nil
}

// Attach seizes thread tid of process pid and stops it. Only that thread
// stops. It is refused when the thread is traced already, when the
// process is in a job-control stop, or when the thread's state could not
// be restored exactly (checked before anything is changed).
func Attach(pid, tid int, opt Options) (*Session, error) {
	opt = opt.withDefaults()
	sb, err := preflight(pid, tid, opt)
	if err != nil {
		return nil, err
	}
	mem, err := openMem(pid)
	if err != nil {
		return nil, err
	}
	s := &Session{pid: pid, tid: tid, opt: opt, ex: newExecutor(), mem: mem, deadline: time.Now().Add(opt.Timeout), sandbox: sb}
	s.ex.run(func() { err = s.attach() })
	if err != nil {
		s.ex.stop(s.traced)
		_ = mem.Close() // read-write, nothing buffered
		return nil, err
	}
	return s, nil
}

// preflight refuses what /proc already tells, and returns the thread's
// seccomp state.
func preflight(pid, tid int, opt Options) (sandbox, error) {
	st, err := procfs.Live().TaskStatus(pid, tid)
	if err != nil {
		if errors.Is(err, procfs.ErrMalformed) {
			return sandbox{}, fmt.Errorf("thread %d of pid %d: %w", tid, pid, err)
		}
		return sandbox{}, fmt.Errorf("%w: thread %d of pid %d", ErrProcessGone, tid, pid)
	}
	var sb sandbox
	if v := st.Value("TracerPid"); v != 0 {
		return sb, fmt.Errorf("%w: thread %d of pid %d is traced by pid %d (a debugger or strace): detach it first", ErrTraced, tid, pid, v)
	}
	if strings.Contains(st.Text["x86_Thread_features"], "shstk") {
		return sb, fmt.Errorf("%w: thread %d of pid %d runs with a shadow stack (CET), which a call made from outside would break", ErrUnsupported, tid, pid)
	}
	sb.mode, sb.filters = int(st.Value("Seccomp")), int(st.Value("Seccomp_filters"))
	if !opt.ownChild {
		if err := sb.refuse(pid, tid, len(opt.Syscalls), true); err != nil {
			return sb, err
		}
	}
	// The return address is 0: page 0 must not be mapped.
	f, err := os.Open(procfs.PIDPath(pid, "maps"))
	if err != nil {
		return sb, fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
	}
	defer func() { _ = f.Close() }() // read-only
	var first [64]byte
	n, _ := f.Read(first[:])
	if lo, _, ok := bytes.Cut(first[:n], []byte("-")); ok {
		if v, err := strconv.ParseUint(string(lo), 16, 64); err == nil && v == 0 {
			return sb, fmt.Errorf("%w: pid %d maps page 0, where calls return", ErrUnsupported, pid)
		}
	}
	return sb, nil
}

func ptrace(req, tid int, addr, data uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// attach runs on the executor and leaves the thread stopped, or, on an
// error, not traced any more as far as it could (see Session.traced).
func (s *Session) attach() error {
	if err := unix.PtraceSeize(s.tid); err != nil {
		return ptraceError("attaching to", s.pid, s.tid, err)
	}
	s.traced = true
	if err := unix.PtraceInterrupt(s.tid); err != nil {
		return ptraceError("interrupting", s.pid, s.tid, err)
	}
	for {
		ws, ok, err := waitFor(s.tid, func() bool { return time.Now().After(s.deadline) })
		if err != nil {
			return fmt.Errorf("waiting for thread %d of pid %d: %w", s.tid, s.pid, err)
		}
		if !ok {
			return fmt.Errorf("%w: thread %d of pid %d did not stop within %s (uninterruptible sleep?); it was left running", ErrTimeout, s.tid, s.pid, s.opt.Timeout)
		}
		kind, sig := classify(ws)
		switch kind {
		case stopInterrupt:
			s.stopped = time.Now()
			if testAtStop != nil {
				testAtStop(s.pid, s.tid)
			}
			if err := s.save(); err != nil {
				_ = s.ptraceDetach()
				return err
			}
			if s.sandbox.mode != 0 && !s.opt.ownChild {
				// Nothing was changed yet: a refusal lets the thread go
				// as it was.
				if err := s.proveSandbox(); err != nil {
					_ = s.ptraceDetach()
					return err
				}
			}
			return nil
		case stopGroup:
			// Job control is stopping the process: leave it stopped.
			_ = s.ptraceDetach()
			return fmt.Errorf("%w: pid %d is being stopped (%s): whoever stopped it expects it to stay stopped; `kill -CONT %d` first", ErrStopped, s.pid, sig, s.pid)
		case stopSignal:
			// A signal that was on its way: deliver it as it would have
			// been, then interrupt again (any ptrace stop clears a
			// pending interrupt: kernel/signal.c, ptrace_stop).
			if err := s.resumeAndInterrupt(int(sig)); err != nil {
				return err
			}
		case stopExited:
			s.reaped()
			return fmt.Errorf("%w: thread %d of pid %d exited while being attached", ErrProcessGone, s.tid, s.pid)
		default:
			if err := s.resumeAndInterrupt(0); err != nil {
				return err
			}
		}
	}
}

// ptraceDetach lets the thread go; the trace is over only when the kernel
// accepted it.
func (s *Session) ptraceDetach() error {
	err := ptrace(unix.PTRACE_DETACH, s.tid, 0, 0)
	if err == nil {
		s.traced = false
	}
	return err
}

// reaped records an exit that wait4 reported: the thread is gone, and so is
// the trace.
func (s *Session) reaped() {
	s.gone = true
	s.traced = false
}

// save reads the thread's registers, extended state and signal mask, and
// proves the extended state can be written back before anything changes.
func (s *Session) save() error {
	if err := unix.PtraceGetRegs(s.tid, &s.saved); err != nil {
		return ptraceError("reading registers of", s.pid, s.tid, err)
	}
	if s.saved.Cs != user64CS {
		return fmt.Errorf("%w: thread %d of pid %d runs 32-bit code (cs %#x)", ErrUnsupported, s.tid, s.pid, s.saved.Cs)
	}
	buf := make([]byte, 64<<10)
	s.xnote = ntX86XSTATE
	n, err := getRegset(s.tid, s.xnote, buf)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENODEV) {
		s.xnote = ntPRFPREG // no XSAVE on this CPU
		n, err = getRegset(s.tid, s.xnote, buf)
	}
	if err != nil {
		return ptraceError("reading the extended state of", s.pid, s.tid, err)
	}
	s.xstate = append([]byte(nil), buf[:n]...)
	if err := setRegset(s.tid, s.xnote, s.xstate); err != nil {
		return fmt.Errorf("%w: the kernel refuses to take back the extended register state of thread %d of pid %d (%d bytes): %w; nothing was changed", ErrUnsupported, s.tid, s.pid, len(s.xstate), err)
	}
	if err := ptrace(unix.PTRACE_GETSIGMASK, s.tid, 8, uintptr(unsafe.Pointer(&s.mask))); err != nil {
		return ptraceError("reading the signal mask of", s.pid, s.tid, err)
	}
	return nil
}

// resumeAndInterrupt resumes the thread from a stop that was not ours
// (delivering sig, 0 for none) and asks for the interrupt stop again.
func (s *Session) resumeAndInterrupt(sig int) error {
	if err := unix.PtraceCont(s.tid, sig); err != nil {
		return ptraceError("resuming", s.pid, s.tid, err)
	}
	if err := unix.PtraceInterrupt(s.tid); err != nil {
		return ptraceError("interrupting", s.pid, s.tid, err)
	}
	return nil
}

func getRegset(tid, note int, buf []byte) (int, error) {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	err := ptrace(unix.PTRACE_GETREGSET, tid, uintptr(note), uintptr(unsafe.Pointer(&iov)))
	runtime.KeepAlive(buf)
	return int(iov.Len), err
}

func setRegset(tid, note int, buf []byte) error {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	err := ptrace(unix.PTRACE_SETREGSET, tid, uintptr(note), uintptr(unsafe.Pointer(&iov)))
	runtime.KeepAlive(buf)
	return err
}

// Run runs fn on the tracer thread, so that the calls fn makes skip the
// hop between threads (tens of microseconds each, while the thread is
// held). fn must not call Detach; a Session is used by one goroutine.
func (s *Session) Run(fn func()) {
	s.exec(func() {
		s.onTracer = true
		defer func() { s.onTracer = false }()
		fn()
	})
}

// exec runs f on the tracer thread.
func (s *Session) exec(f func()) {
	if s.onTracer {
		f()
		return
	}
	s.ex.run(f)
}

// Stop says where the thread was stopped (its saved state).
func (s *Session) Stop() Stop {
	st := Stop{PC: s.saved.Rip, SP: s.saved.Rsp, Syscall: -1}
	if int64(s.saved.Orig_rax) >= 0 {
		st.Syscall = int(s.saved.Orig_rax)
		e := -int64(s.saved.Rax)
		st.Restart = e >= 512 && e <= 516
	}
	return st
}

// Reposition lets the thread run for d and stops it again, for a caller
// that does not like where it stopped (inside the allocator). Refused
// after a call.
func (s *Session) Reposition(d time.Duration) error {
	if s.dirty || s.gone || s.closed {
		return fmt.Errorf("reposition after a call")
	}
	var err error
	s.exec(func() {
		if err = unix.PtraceCont(s.tid, 0); err != nil {
			err = ptraceError("resuming", s.pid, s.tid, err)
			return
		}
		time.Sleep(d)
		if err = unix.PtraceInterrupt(s.tid); err != nil {
			err = ptraceError("interrupting", s.pid, s.tid, err)
			return
		}
		for {
			ws, ok, werr := waitFor(s.tid, func() bool { return time.Now().After(s.deadline) })
			if werr != nil || !ok {
				err = fmt.Errorf("%w: thread %d of pid %d did not stop again", ErrTimeout, s.tid, s.pid)
				return
			}
			kind, sig := classify(ws)
			switch kind {
			case stopInterrupt:
				s.stopped = time.Now()
				if err = s.save(); err == nil && s.sandbox.mode != 0 && !s.opt.ownChild {
					// It stopped in another system call: prove again, and
					// make no call at all when that fails.
					if err = s.proveSandbox(); err != nil {
						s.refused = err
					}
				}
				return
			case stopExited:
				s.reaped()
				err = fmt.Errorf("%w: thread %d of pid %d exited", ErrProcessGone, s.tid, s.pid)
				return
			case stopSignal:
				if err = s.resumeAndInterrupt(int(sig)); err != nil {
					return
				}
			default:
				if err = s.resumeAndInterrupt(0); err != nil {
					return
				}
			}
		}
	})
	return err
}

// Read reads the target's memory.
func (s *Session) Read(addr uint64, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	n, err := s.mem.ReadAt(p, int64(addr))
	if err != nil || n != len(p) {
		return fmt.Errorf("reading %d bytes at %#x in pid %d: %w", len(p), addr, s.pid, err)
	}
	return nil
}

// Write writes the target's memory.
func (s *Session) Write(addr uint64, p []byte) error {
	n, err := s.mem.WriteAt(p, int64(addr))
	if err != nil || n != len(p) {
		return fmt.Errorf("writing %d bytes at %#x in pid %d: %w", len(p), addr, s.pid, err)
	}
	return nil
}

// cleanupGrace is how long past the timeout the calls that undo a
// session's work (fclose, munmap) may still start: they are quick, and
// leaving a mapping behind in the process is worse than a late answer.
const cleanupGrace = 2 * time.Second

// WindDown marks the calls that follow as cleanup: they may start after
// the timeout (up to cleanupGrace) or a cancelled context.
func (s *Session) WindDown() { s.winding = true }

// maxArgs bounds a call's integer or pointer arguments: six in registers,
// the others on the stack (mimalloc's mi_process_info takes eight).
const maxArgs = 8

// Call calls the function at fn with up to eight integer or pointer
// arguments (System V AMD64: six in registers, the rest on the stack) on
// the stopped thread and returns rax. name is for messages and Calls.
func (s *Session) Call(ctx context.Context, name string, fn uint64, args ...uint64) (uint64, error) {
	return s.callChecked(ctx, name, fn, false, args)
}

// CallNested is Call for a function that may wait for a lock while it
// holds another one (jemalloc's epoch refresh and purge hold a global or
// per-arena mutex while they take the next): interrupting it there would
// leave the first one locked for good, so past the timeout it is waited
// for like a busy call (the lock it waits for is held by a thread that
// runs), and interrupted only CallGrace past the timeout, saying that a
// lock may stay held: a wait that long is a deadlock, or a target whose
// function never returns, and memdoctor does not hang on it.
func (s *Session) CallNested(ctx context.Context, name string, fn uint64, args ...uint64) (uint64, error) {
	return s.callChecked(ctx, name, fn, true, args)
}

func (s *Session) callChecked(ctx context.Context, name string, fn uint64, nested bool, args []uint64) (uint64, error) {
	if len(args) > maxArgs {
		return 0, fmt.Errorf("%s: %d arguments, at most %d", name, len(args), maxArgs)
	}
	if s.gone || s.closed {
		return 0, fmt.Errorf("%w: %s not called: the session is over", ErrProcessGone, name)
	}
	if !s.winding && (ctx.Err() != nil || time.Now().After(s.deadline)) || time.Now().After(s.deadline.Add(cleanupGrace)) {
		return 0, fmt.Errorf("%w: %s not called: the %s timeout expired", ErrTimeout, name, s.opt.Timeout)
	}
	if s.refused != nil {
		return 0, fmt.Errorf("%s not called: %w", name, s.refused)
	}
	if s.sandbox.mode != 0 && !s.opt.ownChild {
		if n := threadFilters(s.pid, s.tid); n >= 0 && n != s.proved {
			return 0, fmt.Errorf("%w: %s not called: thread %d of pid %d now runs under %d seccomp filters, %d were proven to allow the calls (another thread added one)", ErrSeccomp, name, s.tid, s.pid, n, s.proved)
		}
	}
	var (
		ret uint64
		err error
	)
	start := time.Now()
	s.exec(func() { ret, err = s.call(ctx, name, fn, nested, args) })
	s.Calls = append(s.Calls, Call{Addr: fn, Name: name, Duration: time.Since(start)})
	return ret, err
}

func (s *Session) call(ctx context.Context, name string, fn uint64, nested bool, args []uint64) (uint64, error) {
	regs := s.saved
	sp := (regs.Rsp-redZone)&^15 - 8 // at entry rsp+8 is 16-byte aligned
	// The return address (0: the call ends in a fault memdoctor catches),
	// then the arguments past the sixth, first at rsp+8 (System V AMD64).
	frame := make([]byte, 8, 8+8*max(0, len(args)-6))
	for _, a := range args[min(6, len(args)):] {
		frame = binary.LittleEndian.AppendUint64(frame, a)
	}
	if err := s.Write(sp, frame); err != nil {
		return 0, err
	}
	regs.Rsp = sp
	regs.Rip = fn
	regs.Rax = 0
	regs.Orig_rax = ^uint64(0)   // not in a system call: nothing to restart
	regs.Eflags &^= 1<<10 | 1<<8 // DF (the ABI wants it clear), TF
	for i, a := range args[:min(6, len(args))] {
		*[]*uint64{&regs.Rdi, &regs.Rsi, &regs.Rdx, &regs.Rcx, &regs.R8, &regs.R9}[i] = a
	}
	if err := unix.PtraceSetRegs(s.tid, &regs); err != nil {
		return 0, ptraceError("setting registers of", s.pid, s.tid, err)
	}
	s.dirty = true
	if !s.maskSet {
		m := callMask()
		if err := ptrace(unix.PTRACE_SETSIGMASK, s.tid, 8, uintptr(unsafe.Pointer(&m))); err != nil {
			return 0, ptraceError("setting the signal mask of", s.pid, s.tid, err)
		}
		s.maskSet = true
	}
	if err := unix.PtraceCont(s.tid, 0); err != nil {
		return 0, ptraceError("resuming", s.pid, s.tid, err)
	}
	var (
		interrupted bool
		told        bool
		next        time.Time
	)
	deadline := s.deadline
	if s.winding {
		deadline = deadline.Add(cleanupGrace)
	}
	hard := deadline.Add(s.opt.CallGrace)
	give := func() bool {
		now := time.Now()
		return (now.After(deadline) || ctx.Err() != nil && !s.winding) && now.After(next)
	}
	for {
		ws, ok, err := waitFor(s.tid, give)
		if err != nil {
			s.gone = errors.Is(err, unix.ECHILD)
			return 0, fmt.Errorf("%w: waiting for %s in thread %d of pid %d: %w", ErrProcessGone, name, s.tid, s.pid, err)
		}
		if !ok {
			// Past the deadline, or cancelled: undo a call that waits on
			// a lock; wait for a busy one.
			next = time.Now().Add(10 * time.Millisecond)
			// A nested call is left waiting, until CallGrace past the
			// deadline: a lock it waits for that long is never coming (a
			// deadlock, or a target's own mallctl that never returns), and
			// memdoctor does not wait for ever.
			if nr, _ := ThreadSyscall(s.pid, s.tid); nr == unix.SYS_FUTEX && !interrupted && (!nested || time.Now().After(hard)) {
				if err := unix.PtraceInterrupt(s.tid); err == nil {
					interrupted = true
				}
			}
			if !told && time.Now().After(hard) && s.opt.OnStuck != nil {
				told = true
				what := "is busy, not waiting on a lock"
				if nested {
					what = "may hold one allocator lock while it waits for another"
				}
				s.opt.OnStuck(fmt.Sprintf("%s has run for more than %s in thread %d of pid %d and %s: stopping it could leave an allocator lock held, so memdoctor waits for it to return", name, s.opt.Timeout+s.opt.CallGrace, s.tid, s.pid, what))
			}
			continue
		}
		kind, sig := classify(ws)
		switch kind {
		case stopSignal:
			var r unix.PtraceRegs
			if err := unix.PtraceGetRegs(s.tid, &r); err != nil {
				return 0, ptraceError("reading registers of", s.pid, s.tid, err)
			}
			if sig == syscall.SIGSEGV && r.Rip == 0 {
				return r.Rax, nil // returned
			}
			if isFault(sig) {
				return 0, fmt.Errorf("%w: %s in pid %d got %s at %#x; the signal was discarded and the thread will be put back where it was", ErrCallFaulted, name, s.pid, sig, r.Rip)
			}
			// Only SIGSTOP gets here (the rest is blocked): keep it for
			// after the detach.
			s.deferred = append(s.deferred, sig)
			if err := s.carryOn(interrupted); err != nil {
				return 0, err
			}
		case stopInterrupt:
			if interrupted && nested {
				return 0, fmt.Errorf("%w: %s still waited on a lock %s past the deadline; memdoctor interrupted it and will put its thread back where it was, but it may have held another allocator lock, which then stays held: if the process stalls in malloc, restart it", ErrTimeout, name, s.opt.CallGrace)
			}
			if interrupted {
				return 0, fmt.Errorf("%w: %s did not return within %s; its thread was waiting on a lock, so memdoctor interrupted it and will put it back where it was (nothing changed)", ErrTimeout, name, s.opt.Timeout)
			}
			if err := unix.PtraceCont(s.tid, 0); err != nil {
				return 0, ptraceError("resuming", s.pid, s.tid, err)
			}
		case stopExited:
			s.reaped()
			return 0, fmt.Errorf("%w: pid %d exited during %s", ErrProcessGone, s.pid, name)
		default:
			// A group stop (the process is being stopped: it re-stops
			// after the detach) or another event: carry on with the call.
			if err := s.carryOn(interrupted); err != nil {
				return 0, err
			}
		}
	}
}

// carryOn resumes the call after a stop that was not its end; an
// interrupt asked for before that stop was cleared by it, so it is asked
// for again.
func (s *Session) carryOn(interrupted bool) error {
	if interrupted {
		return s.resumeAndInterrupt(0)
	}
	if err := unix.PtraceCont(s.tid, 0); err != nil {
		return ptraceError("resuming", s.pid, s.tid, err)
	}
	return nil
}

func isFault(sig syscall.Signal) bool {
	for _, f := range faultSignals {
		if sig == f {
			return true
		}
	}
	return false
}

// Detach puts the thread back exactly where it was (registers, extended
// state, signal mask) and lets it go; stop signals taken during a call are
// sent again. It is safe to call more than once.
func (s *Session) Detach() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	s.ex.run(func() { err = s.detach() })
	s.Held = time.Since(s.stopped)
	s.ex.stop(s.traced)
	_ = s.mem.Close() // nothing buffered
	for _, sig := range s.deferred {
		_ = syscall.Kill(s.pid, sig)
	}
	return err
}

func (s *Session) detach() error {
	var mismatch error
	if s.gone {
		return nil
	}
	// Any error below leaves s.traced set: the tracer thread then ends,
	// and the kernel detaches the thread whatever state it is in (a thread
	// killed meanwhile, or running with our interrupt still pending after
	// a Reposition that timed out, cannot be detached by PTRACE_DETACH and
	// would stop for good at the pending interrupt).
	if s.dirty {
		restore := s.saved
		if testBreak == "restart" {
			restore.Orig_rax = ^uint64(0) // as when the syscall state is lost
		}
		if err := unix.PtraceSetRegs(s.tid, &restore); err != nil {
			if errors.Is(err, unix.ESRCH) {
				return nil // killed meanwhile, or not in a stop
			}
			return ptraceError("restoring registers of", s.pid, s.tid, err)
		}
		if testBreak != "xstate" {
			if err := setRegset(s.tid, s.xnote, s.xstate); err != nil {
				return ptraceError("restoring the extended state of", s.pid, s.tid, err)
			}
		}
		var check unix.PtraceRegs
		if err := unix.PtraceGetRegs(s.tid, &check); err == nil && check != restore {
			mismatch = fmt.Errorf("registers of thread %d of pid %d read back different after the restore: %+v, saved %+v", s.tid, s.pid, check, s.saved)
		}
	}
	if s.maskSet {
		if err := ptrace(unix.PTRACE_SETSIGMASK, s.tid, 8, uintptr(unsafe.Pointer(&s.mask))); err != nil {
			return ptraceError("restoring the signal mask of", s.pid, s.tid, err)
		}
	}
	if err := s.ptraceDetach(); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil // gone, or running with our interrupt pending: see above
		}
		return ptraceError("detaching from", s.pid, s.tid, err)
	}
	return mismatch
}

const nativeMachine = elf.EM_X86_64
