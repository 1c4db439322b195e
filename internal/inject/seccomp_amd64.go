//go:build linux && amd64

package inject

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// ptraceSeccompGetFilter is PTRACE_SECCOMP_GET_FILTER (Linux 4.4, with
// CONFIG_CHECKPOINT_RESTORE): addr is the filter's index, 0 the most
// recently installed; data receives its instructions, and the call returns
// how many there are.
const ptraceSeccompGetFilter = 0x420c

// Bounds on what is read: the kernel holds at most 32768 instructions per
// chain (each filter counts 4 more) and 4096 per filter.
const (
	maxFilters      = 8192
	maxFilterInsns  = 4096
	maxFiltersInsns = 1 << 16
)

// readFilters reads every seccomp filter of the stopped thread, the most
// recent first. It runs on the tracer thread.
func (s *Session) readFilters() ([][]SockFilter, error) {
	var out [][]SockFilter
	total := 0
	for i := 0; i < maxFilters; i++ {
		n, _, e := unix.Syscall6(unix.SYS_PTRACE, ptraceSeccompGetFilter, uintptr(s.tid), uintptr(i), 0, 0, 0)
		if e == unix.ENOENT {
			return out, nil
		}
		if e != 0 {
			return nil, e
		}
		if n == 0 || n > maxFilterInsns || total+int(n) > maxFiltersInsns {
			return nil, fmt.Errorf("filter %d has %d instructions", i, n)
		}
		// The kernel writes the whole filter at index i without being told
		// the buffer's size, and another thread of the target can replace
		// this thread's filters (SECCOMP_FILTER_FLAG_TSYNC) between the two
		// calls: the buffer holds the largest filter the kernel accepts.
		buf := make([]SockFilter, maxFilterInsns)
		m, _, e := unix.Syscall6(unix.SYS_PTRACE, ptraceSeccompGetFilter, uintptr(s.tid), uintptr(i), uintptr(unsafe.Pointer(&buf[0])), 0, 0)
		runtime.KeepAlive(buf)
		if e != 0 {
			return nil, e
		}
		if m > maxFilterInsns {
			// Not reached on Linux (BPF_MAXINSNS); had it been, the
			// kernel wrote past buf.
			panic(fmt.Sprintf("seccomp filter %d of thread %d has %d instructions, more than the kernel allows", i, s.tid, m))
		}
		prog := slices.Clone(buf[:m])
		if m != n {
			return nil, fmt.Errorf("filter %d changed size while read (%d, then %d instructions)", i, n, m)
		}
		total += int(n)
		out = append(out, prog)
	}
	return nil, fmt.Errorf("more than %d filters", maxFilters)
}

// restartSyscall is what the kernel runs when the thread is let go after
// an interrupted system call: the call itself again, or restart_syscall
// for one interrupted with ERESTART_RESTARTBLOCK (a sleep). Seccomp sees
// it like any other; ok is false when nothing is restarted.
func (s *Session) restartSyscall() (Syscall, bool) {
	st := s.Stop()
	if st.Syscall < 0 || !st.Restart {
		return Syscall{}, false
	}
	r := s.saved
	sc := Syscall{Name: fmt.Sprintf("system call %d, restarted after the stop", st.Syscall), Nr: st.Syscall,
		Args: [6]uint64{r.Rdi, r.Rsi, r.Rdx, r.R10, r.R8, r.R9}, Known: 0x3f}
	if -int64(r.Rax) == 516 { // ERESTART_RESTARTBLOCK
		sc.Name, sc.Nr = "restart_syscall, which resumes the interrupted sleep", unix.SYS_RESTART_SYSCALL
	}
	return sc, true
}

// proveSandbox reads the stopped thread's seccomp filters and proves that
// every declared system call, and the restart of the one it was stopped
// in, is allowed on every path. It runs on the tracer thread, before
// anything is changed.
func (s *Session) proveSandbox() error {
	if err := s.sandbox.refuse(s.pid, s.tid, len(s.opt.Syscalls), false); err != nil {
		return err
	}
	held := func() string { return strconv.FormatInt(time.Since(s.stopped).Microseconds(), 10) + " µs" }
	filters, err := s.readFilters()
	if err != nil {
		why := err.Error()
		if errors.Is(err, unix.EACCES) {
			why = "the kernel shows them only to a tracer with CAP_SYS_ADMIN that runs under no seccomp filter itself"
		} else if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO) {
			why = "this kernel cannot show them (it needs CONFIG_CHECKPOINT_RESTORE)"
		}
		return fmt.Errorf("%w: thread %d of pid %d runs under %d seccomp filters, which memdoctor could not read (%s): without them it cannot prove that its calls make no system call they forbid, and a forbidden one can kill the process; nothing was called (the thread was held %s and put back as it was); run memdoctor as root outside any sandbox, or %s",
			ErrSeccomp, s.tid, s.pid, s.sandbox.filters, why, held(), preloadHint)
	}
	if sc, ok := s.restartSyscall(); ok {
		if err := proveSyscalls(filters, []Syscall{sc}); err != nil {
			if sc.Nr != unix.SYS_RESTART_SYSCALL {
				return fmt.Errorf("%w: thread %d of pid %d runs under %d seccomp filters, and %w: nothing was called", ErrSeccomp, s.tid, s.pid, len(filters), err)
			}
			// The thread entered a sleep between being chosen and being
			// stopped (SleepRestart refuses it before): let go as it
			// is, it would call restart_syscall and be killed. Its sleep
			// ends early with EINTR instead, as after a signal handler.
			regs := s.saved
			eintr := int64(unix.EINTR)
			regs.Rax = uint64(-eintr)
			if err := unix.PtraceSetRegs(s.tid, &regs); err != nil {
				return ptraceError("setting registers of", s.pid, s.tid, err)
			}
			return fmt.Errorf("%w: thread %d of pid %d runs under %d seccomp filters, and %w: it went to sleep just as it was stopped, and its filters forbid resuming the sleep, so the sleep returns EINTR (early, as after a signal) instead of the process being killed; nothing was called", ErrSeccomp, s.tid, s.pid, len(filters), err)
		}
	}
	calls := s.opt.Syscalls
	if err := proveSyscalls(filters, calls); err != nil {
		return fmt.Errorf("%w: thread %d of pid %d runs under %d seccomp filters, and %w, which the calls into it can make: nothing was called (the thread was held %s and put back as it was); %s",
			ErrSeccomp, s.tid, s.pid, len(filters), err, held(), preloadHint)
	}
	s.proved = len(filters)
	if n := threadFilters(s.pid, s.tid); n >= 0 && n != s.proved {
		return fmt.Errorf("%w: thread %d of pid %d runs under %d seccomp filters, %d were read: nothing was called", ErrSeccomp, s.tid, s.pid, n, s.proved)
	}
	return nil
}

// threadFilters reads Seccomp_filters of one thread (Linux 5.9+; -1 when
// it cannot be read). Filters are never removed, so an unchanged count is
// an unchanged chain.
func threadFilters(pid, tid int) int {
	st, err := procfs.Live().TaskStatus(pid, tid)
	if err != nil {
		return -1
	}
	if n, ok := st.Get("Seccomp_filters"); ok {
		return int(n)
	}
	return -1
}

// SleepRestart reports whether thread tid of pid is blocked in a system
// call that the kernel, once the thread is stopped and let go, resumes
// through restart_syscall rather than by running it again (it returned
// ERESTART_RESTARTBLOCK): nanosleep, clock_nanosleep, poll with a timeout,
// a futex wait with a timeout, restart_syscall itself. Merely stopping
// such a thread makes it call restart_syscall, which a seccomp filter may
// forbid: for a filtered thread that is known only once it is stopped, too
// late.
func SleepRestart(pid, tid int) bool {
	sc, err := procfs.Live().TaskSyscall(pid, tid)
	if err != nil || !sc.Full {
		return false // running, or not in a system call
	}
	arg := func(i int) uint64 { return sc.Args[i] }
	switch sc.Nr {
	case unix.SYS_NANOSLEEP, unix.SYS_CLOCK_NANOSLEEP, unix.SYS_RESTART_SYSCALL:
		return true
	case unix.SYS_POLL:
		return int32(uint32(arg(2))) >= 0 // a timeout in ms; negative waits for ever
	case unix.SYS_FUTEX:
		return arg(3) != 0 // a timeout
	}
	return false
}
