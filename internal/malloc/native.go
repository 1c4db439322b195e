package malloc

// Calling glibc's allocator functions inside a running process, natively
// (internal/inject): no gdb, no debug symbols.
//
// One session:
//
//	canary     once per memdoctor process, the mechanism is tried on a child
//	           of memdoctor's own; after a failure nothing else is touched
//	resolve    malloc_info, malloc_trim, mallinfo2, mmap, munmap, fmemopen,
//	           ftell, fclose and __errno_location from the process' own
//	           libc.so.6 (dynamic symbols, default versions)
//	thread     one thread is chosen (chooseThread: blocked in a system call
//	           the allocator never makes, main thread first) and only it is
//	           stopped; the other threads keep running, so a lock one of
//	           them holds is released and the process goes on serving
//	position   if the thread stopped inside the allocator (in user mode
//	           inside libc, or in a system call malloc makes), it is let run
//	           a little and stopped again, a few times
//	errno      saved through __errno_location and written back: every call
//	           may change it
//	calls      the work (Inspect, Trim)
//	restore    registers, extended state and signal mask as they were; the
//	           interrupted system call is restarted by the kernel
//
// A call that outlives the timeout while waiting on a lock is interrupted
// and undone (malloc_info, mallinfo2 and malloc_trim hold at most one arena
// lock, and never while waiting for the next); a busy one (madvise in a big
// trim) is waited for: interrupting it could leave a lock held.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/preload"
)

// Call is one function call made inside the process.
type Call struct {
	// Function is the function called.
	Function string `json:"function"`
	// Ms is the wall time of the call as memdoctor saw it.
	Ms float64 `json:"ms"`
}

// Pause says how long memdoctor held one thread of the process.
type Pause struct {
	// StoppedMs is how long the thread was held stopped outside calls:
	// attaching, between calls, restoring.
	StoppedMs float64 `json:"stopped_ms"`
	// AttachedMs is the wall time from the stop to the detach: how long
	// the thread was not running its own code.
	AttachedMs float64 `json:"attached_ms"`
	// CallsMs is the time spent in calls.
	CallsMs float64 `json:"calls_ms"`
	// Calls lists every call.
	Calls []Call `json:"calls"`
	// Threads is the number of threads of the process; only Thread was
	// stopped, the others ran throughout.
	Threads int `json:"threads"`
	// Thread is the thread (TID) the calls ran on, and Why says why it
	// was chosen.
	Thread int    `json:"thread"`
	Why    string `json:"thread_choice"`
}

// session is one thread of one target, held through inject.
type session struct {
	t   *target
	opt Options
	in  *inject.Session
	fn  map[string]uint64

	errnoAddr  uint64
	errnoVal   [4]byte
	errnoSaved bool
	pause      Pause
	lastInside string
}

// sessionFuncs are the functions a session may call.
var sessionFuncs = []string{"__errno_location", "mmap", "munmap", "fmemopen", "ftell", "fclose", "malloc_info", "malloc_trim"}

// sessionSyscalls are the system calls the functions a session calls can
// make on x86-64, by what glibc's sources (2.17 to 2.41) do in them: the
// mmap memdoctor asks for, and the allocator's own in malloc (fmemopen's
// FILE), free (fclose), malloc_info and malloc_trim. A thread that never
// allocated gets its tcache and maybe a new arena on its first malloc:
// new_heap maps PROT_NONE and mprotects it read-write, arena_get2 counts
// the CPUs (sched_getaffinity, or reading /sys/devices/system/cpu/online);
// shrink_heap may read /proc/sys/vm/overcommit_memory once; systrim
// shrinks the heap with brk, mtrim and heap trimming madvise, arenas are
// locked with futex. What is known of an argument is used: malloc maps
// memory read-write or PROT_NONE, never executable (a filter such as
// systemd's MemoryDenyWriteExecute= refuses only writable and executable
// together). A seccomp filter must allow each of them, for every value of
// what is not known, before a call is made (inject.Options.Syscalls).
var sessionSyscalls = func() []inject.Syscall {
	const (
		protNone = 0
		protRW   = 0x1 | 0x2
		argProt  = 1 << 2
	)
	return []inject.Syscall{
		{Name: "mmap (read-write)", Nr: 9, Args: [6]uint64{2: protRW}, Known: argProt},
		{Name: "mmap (PROT_NONE)", Nr: 9, Args: [6]uint64{2: protNone}, Known: argProt},
		{Name: "mprotect (read-write)", Nr: 10, Args: [6]uint64{2: protRW}, Known: argProt},
		{Name: "munmap", Nr: 11},
		{Name: "brk", Nr: 12},
		{Name: "mremap", Nr: 25},
		{Name: "madvise", Nr: 28},
		{Name: "futex", Nr: 202},
		{Name: "sched_getaffinity", Nr: 204},
		{Name: "getrandom", Nr: 318},
		{Name: "openat", Nr: 257},
		{Name: "open", Nr: 2},
		{Name: "read", Nr: 0},
		{Name: "close", Nr: 3},
	}
}()

// nativeSyscalls are the system calls of a session into jemalloc or
// tcmalloc: glibc's list (their malloc, purge and release map, unmap,
// madvise and lock with the same calls, and read the CPU count or
// /proc/sys/vm/overcommit_memory once) and getcpu, which jemalloc's
// per-CPU arenas ask where the vDSO does not answer.
var nativeSyscalls = append(sessionSyscalls[:len(sessionSyscalls):len(sessionSyscalls)], inject.Syscall{Name: "getcpu", Nr: 309})

// withSession holds one thread of the target, runs fn, and always puts the
// thread back; it returns the pause (nil when no thread was stopped). A
// failure of a process that exited meanwhile is reported as ErrProcessGone,
// whatever step noticed it first.
func withSession(ctx context.Context, t *target, opt Options, fn func(*session) error) (*Pause, error) {
	p, err := holdAndCall(ctx, t, opt, fn)
	if err != nil && !errors.Is(err, ErrProcessGone) && inject.Exited(t.pid, t.pid, 20*time.Millisecond) {
		err = fmt.Errorf("%w: pid %d (%s) exited during the work (%w)", ErrProcessGone, t.pid, t.comm, err)
	}
	return p, err
}

func holdAndCall(ctx context.Context, t *target, opt Options, fn func(*session) error) (*Pause, error) {
	if !inject.Supported {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, "calling into a process is implemented for x86-64 only: use the preload library (memdoctor preload)")
	}
	if !t.elf64 || t.machine != emX8664 {
		return nil, fmt.Errorf("%w: pid %d (%s) is not an x86-64 program", ErrUnsupported, t.pid, t.comm)
	}
	deadline := time.Now().Add(opt.Timeout)
	if err := inject.Canary(); err != nil {
		return nil, err
	}
	names, calls := sessionFuncs, sessionSyscalls
	if t.server.Name != "" {
		// Another allocator serves malloc: its own functions, and from
		// libc only what the scratch page and errno need.
		names, calls = []string{"__errno_location", "mmap", "munmap"}, nativeSyscalls
	} else if t.glibcAtLeast(2, 33) {
		names = append(names[:len(names):len(names)], "mallinfo2")
	}
	syms, err := inject.Resolve(t.pid, t.maps, names...)
	if err != nil {
		return nil, fmt.Errorf("pid %d (%s): %w", t.pid, t.comm, err)
	}
	if t.server.Name != "" {
		own, err := t.nativeFuncs()
		if err != nil {
			return nil, err
		}
		for k, v := range own {
			syms[k] = v
		}
	}
	if time.Now().After(deadline) || ctx.Err() != nil {
		return nil, fmt.Errorf("%w: the %s timeout expired before attaching", ErrTimeout, opt.Timeout)
	}
	sc, known := t.syscalls()
	ths, err := readThreads(t.pid)
	if err != nil {
		known = false
	}
	if t.sandboxed() != "" {
		for i := range ths {
			ths[i].sleeper = inject.SleepRestart(t.pid, ths[i].tid)
		}
	}
	s := &session{t: t, opt: opt, fn: syms}
	s.pause.Threads = len(ths)
	tid, why := chooseThread(t.pid, ths, sc, known)
	if opt.thread != 0 {
		tid, why = opt.thread, "chosen by the caller"
	}
	s.pause.Thread, s.pause.Why = tid, why
	in, err := inject.With(t.pid, tid, inject.Options{Timeout: time.Until(deadline), CallGrace: opt.CallGrace, OnStuck: opt.OnStuck, Syscalls: calls}, func(in *inject.Session) error {
		s.in = in
		if opt.thread == 0 {
			s.position()
		}
		err := s.saveErrno(ctx)
		if err == nil {
			err = fn(s)
		}
		s.in.WindDown()
		if s.errnoSaved {
			if werr := s.in.Write(s.errnoAddr, s.errnoVal[:]); werr != nil && err == nil {
				err = werr
			}
		}
		return err
	})
	if in == nil {
		if errors.Is(err, inject.ErrTimeout) {
			err = fmt.Errorf("%w (while attaching)", err)
		}
		return nil, err
	}
	s.in = in
	s.finishPause()
	p := s.pause
	if err != nil && errors.Is(err, inject.ErrTimeout) && strings.Contains(err.Error(), "not called") {
		err = fmt.Errorf("%w (between calls)", err)
	}
	return &p, err
}

// position moves the thread out of the allocator when it stopped inside
// it: in user mode within an allocator's code, or in a system call malloc
// makes. A few short runs; after that the timeout guards the calls.
func (s *session) position() {
	sc, _ := s.t.syscalls()
	for try := 0; try < 8; try++ {
		st := s.in.Stop()
		inside := ""
		switch {
		case st.Syscall >= 0 && contains(sc.malloc, st.Syscall):
			inside = fmt.Sprintf("in system call %d, which malloc makes", st.Syscall)
		case st.Syscall < 0 && s.t.inAllocator(st.PC):
			inside = "in user mode inside the allocator's code"
		}
		if inside == "" {
			if try > 0 {
				s.pause.Why += fmt.Sprintf(" (stopped again %d times: it was %s)", try, s.lastInside)
			}
			return
		}
		s.lastInside = inside
		if err := s.in.Reposition(time.Duration(1+try) * time.Millisecond); err != nil {
			return
		}
	}
	s.pause.Why += "; it stayed inside the allocator, so a call may wait for a lock that thread holds (the timeout then undoes it)"
}

func contains(l []int, n int) bool {
	for _, x := range l {
		if x == n {
			return true
		}
	}
	return false
}

// saveErrno saves the thread's errno, which every call may change.
func (s *session) saveErrno(ctx context.Context) error {
	addr, err := s.call(ctx, "__errno_location")
	if err != nil {
		return err
	}
	if err := s.in.Read(addr, s.errnoVal[:]); err != nil {
		return err
	}
	s.errnoAddr, s.errnoSaved = addr, true
	return nil
}

// call calls one of the resolved functions.
func (s *session) call(ctx context.Context, name string, args ...uint64) (uint64, error) {
	return s.callAs(ctx, name, name, false, args...)
}

// callAs calls the resolved function fn, named as for the record
// (mallctl("epoch")); nested: it may wait for a lock while holding
// another, so it is never interrupted (inject.Session.CallNested).
func (s *session) callAs(ctx context.Context, fn, as string, nested bool, args ...uint64) (uint64, error) {
	addr, ok := s.fn[fn]
	if !ok {
		return 0, fmt.Errorf("%w: %s was not resolved in pid %d", inject.ErrNoSymbol, fn, s.t.pid)
	}
	n := len(s.in.Calls)
	var (
		v   uint64
		err error
	)
	if nested {
		v, err = s.in.CallNested(ctx, as, addr, args...)
	} else {
		v, err = s.in.Call(ctx, as, addr, args...)
	}
	if len(s.in.Calls) > n { // not when refused before it ran
		c := s.in.Calls[n]
		s.pause.Calls = append(s.pause.Calls, Call{Function: as, Ms: ms(c.Duration)})
	}
	return v, err
}

// finishPause computes the pause figures once the thread was let go.
func (s *session) finishPause() {
	s.pause.AttachedMs = ms(s.in.Held)
	for _, c := range s.pause.Calls {
		s.pause.CallsMs += c.Ms
	}
	s.pause.StoppedMs = max(0, s.pause.AttachedMs-s.pause.CallsMs)
}

// inAllocator reports whether pc lies in the code of libc or of another
// allocator the process maps.
func (t *target) inAllocator(pc uint64) bool {
	for _, m := range t.maps {
		if pc < m.Start || pc >= m.End || !strings.Contains(m.Perms, "x") {
			continue
		}
		if inject.IsLibc(m.Path) {
			return true
		}
		b := m.Path[strings.LastIndexByte(m.Path, '/')+1:]
		for _, a := range []string{"libjemalloc", "libtcmalloc", "libmimalloc", preload.LibName} {
			if strings.HasPrefix(b, a) {
				return true
			}
		}
	}
	return false
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
