// Package inject calls a function inside another running process, natively
// through ptrace, and leaves the process exactly as it found it.
//
// memdoctor uses it to call glibc's malloc_info, mallinfo2 and malloc_trim
// in a process that was not started with memdoctor's preload library. No
// debugger is needed and no debug symbols: functions are found in the
// target's own libc.so.6 (its dynamic symbol table, read through
// /proc/PID/map_files so a process in a container or one running a libc
// replaced on disk is read right).
//
// One call, step by step (x86-64):
//
//  1. PTRACE_SEIZE one thread (the caller chooses it: one blocked in a
//     system call the allocator never makes), then PTRACE_INTERRUPT it and
//     wait for the interrupt stop. Only that thread stops; the process'
//     other threads keep running, so a lock one of them holds is released
//     and the process goes on serving.
//  2. Save the thread's general registers (PTRACE_GETREGS), its whole
//     extended state (PTRACE_GETREGSET NT_X86_XSTATE, read into a large
//     buffer: the kernel says how many bytes it wrote, and exactly that
//     many are written back; the kernel refuses any other size, which is
//     what breaks gdb 13 on CPUs with AMX) and its signal mask.
//  3. For the call: block every signal in that thread except the
//     synchronous fault signals (PTRACE_SETSIGMASK), so a signal that
//     arrives during the call stays pending and is delivered once the
//     thread is back where it was. Fault signals stay unblocked on purpose:
//     a fault on a blocked signal makes the kernel reset the process'
//     handler for it to the default, which would break a JVM.
//  4. Build the frame below the red zone (128 bytes) of the thread's stack,
//     16-byte aligned at the call, with return address 0. Set rip to the
//     function, the System V argument registers, rax 0 (no vector
//     arguments), and orig_rax -1 so the kernel does not treat the new
//     registers as an interrupted system call to restart.
//  5. PTRACE_CONT. The function returns to address 0, the fetch faults, and
//     the thread stops in a SIGSEGV signal-delivery-stop with rip 0: the
//     result is in rax. The SIGSEGV is discarded, never delivered.
//  6. After the last call: write back the saved registers, extended state
//     and signal mask, and detach with no signal. If the thread was
//     interrupted inside a system call, orig_rax and rax (-ERESTART*) are
//     the kernel's own, and the kernel's signal-return path restarts the
//     call (or returns EINTR when a handler runs) exactly as after any
//     signal: no -ERESTART* value reaches user space.
//
// What else can happen, and what is done:
//
//   - The call faults (a bad pointer, a corrupt heap): the fault signal is
//     discarded, the state restored, and the call reported as failed. The
//     process goes on as if nothing had happened.
//   - A job-control stop (SIGSTOP and friends) during the call: it cannot
//     be blocked, so it is taken, the call continues, and the stop is sent
//     again after the detach.
//   - The call outlives the timeout while waiting on a futex: it holds no
//     allocator lock (malloc_info, mallinfo2 and malloc_trim take one arena
//     lock at a time), so the thread is interrupted and put back where it
//     was; the call is abandoned. A call that is busy (madvise in a large
//     trim) is never interrupted, since that could leave a lock held: it is
//     waited for, and the caller is told.
//   - memdoctor cannot stop the thread (it never reaches a stop), cannot
//     detach it (killed meanwhile, or running with our interrupt pending),
//     or cannot read it: the tracer thread exits, which makes the kernel
//     detach the thread with the interrupt cleared, or release it when it
//     is a zombie only its tracer could reap. The rule has no exception: a
//     tracer thread goes back to Go's scheduler only after the kernel
//     accepted PTRACE_DETACH or reported the thread's exit, and the session
//     returns only once an ending tracer thread is gone.
//   - memdoctor killed with SIGKILL during a call: the thread returns to
//     address 0 with no tracer and the process dies of SIGSEGV. This is
//     the one case no tracer can cover; SIGINT and SIGTERM only take
//     effect between calls.
//
// A thread under seccomp (seccomp.go): in strict mode it is never called
// into; under filters, the filters are read once the thread is stopped
// and run on every system call the caller declared (Options.Syscalls) and
// on the restart of the call it was stopped in; only when all of them are
// allowed on every path is a call made, else the thread is let go as it
// was. A filtered thread asleep in a call the kernel resumes through
// restart_syscall is not even stopped: the stop alone would make it call
// restart_syscall, before its filters can be read.
//
// Before the first call on any real process, the mechanism is tried on a
// throwaway child of memdoctor's own (Canary): several threads, one blocked
// in clock_nanosleep with known values in its general and vector
// registers. If the child's sleep does not finish normally or a register
// changed, nothing else is touched.
//
// All ptrace requests for one tracee must come from the thread that
// attached, so every Session runs its requests on one locked OS thread.
// Never the process' main thread: Go parks a main thread whose locked
// goroutine exits instead of ending it, and a parked tracer would hold its
// tracee stopped for good.
package inject
