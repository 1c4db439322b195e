//go:build !linux

package inject

import "time"

// ThreadSyscall reports the system call a thread is blocked in: Linux only.
func ThreadSyscall(pid, tid int) (nr int, ok bool) { return -1, false }

// Exited reports whether a thread is gone: Linux only, so never on others.
func Exited(pid, tid int, wait time.Duration) bool { return false }

// PtraceHint says why memdoctor cannot call into a process here.
func PtraceHint() string { return "memdoctor calls into processes on Linux only" }
