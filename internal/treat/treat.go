// Package treat is memdoctor's remedies on a running process' allocator:
// reading glibc malloc's state (malloc, check --malloc), estimating and
// applying malloc_trim (trim), each said on stderr before a thread of the
// process is held. Commands parse flags and call it.
package treat

import (
	"context"
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/malloc"
)

// Request is one process to read or trim, and how.
type Request struct {
	PID int
	// Method is auto, ptrace or preload ("gdb", its old name, is read as
	// ptrace with a warning).
	Method  string
	Timeout time.Duration
	// Mallinfo2 also calls mallinfo2 as a cross-check.
	Mallinfo2 bool
	// Warn says on stderr what is done to the process (a thread held, a
	// call stuck).
	Warn func(format string, a ...any)
}

// Check validates the method and the timeout.
func (r Request) Check() error {
	_, err := r.options(false)
	return err
}

func (r Request) options(warn bool) (malloc.Options, error) {
	m := malloc.Method(r.Method)
	switch m {
	case malloc.MethodAuto, malloc.MethodPtrace, malloc.MethodPreload:
	case "gdb":
		if warn {
			r.warn("memdoctor: --method gdb is now --method ptrace: memdoctor calls into the process itself, gdb is not used\n")
		}
		m = malloc.MethodPtrace
	default:
		return malloc.Options{}, fmt.Errorf("--method %q: want auto, ptrace or preload", r.Method)
	}
	if r.Timeout <= 0 {
		return malloc.Options{}, fmt.Errorf("--timeout %s: want more than 0", r.Timeout)
	}
	return malloc.Options{Timeout: r.Timeout, Method: m, Mallinfo2: r.Mallinfo2,
		OnStuck: func(msg string) { r.warn("memdoctor: %s\n", msg) }}, nil
}

func (r Request) warn(format string, a ...any) {
	if r.Warn != nil {
		r.Warn(format, a...)
	}
}

// pauseLine says how long memdoctor held a thread of the process.
func (r Request) pauseLine(p *malloc.Pause) {
	if p != nil {
		r.warn("memdoctor: %s\n", pauseLine(r.PID, p))
	}
}

// Inspect reads the allocator state of the process (malloc).
func Inspect(ctx context.Context, r Request) (*malloc.Report, error) {
	opt, err := r.options(true)
	if err != nil {
		return nil, err
	}
	if malloc.WillPause(r.PID, opt) {
		r.warn("memdoctor: holding one thread of pid %d briefly to read its allocator's state in it (about a millisecond)\n", r.PID)
	}
	rep, err := malloc.Inspect(ctx, r.PID, opt)
	if rep != nil {
		r.pauseLine(rep.Pause)
	}
	return rep, err
}

// Estimate is trim's dry run: the expected gain and what --apply would
// run (noPause: from /proc only, an upper bound).
func Estimate(ctx context.Context, r Request, noPause bool) (*malloc.TrimEstimate, error) {
	opt, err := r.options(true)
	if err != nil {
		return nil, err
	}
	if malloc.WillPause(r.PID, opt) && !noPause {
		r.warn("memdoctor: holding one thread of pid %d briefly to read its allocator's state for the estimate (--no-pause to read /proc only)\n", r.PID)
	}
	est, err := malloc.Estimate(ctx, r.PID, opt, noPause)
	if est != nil && est.Report != nil {
		r.pauseLine(est.Report.Pause)
	}
	return est, err
}

// Trim calls malloc_trim(0) in the process (trim --apply).
func Trim(ctx context.Context, r Request) (*malloc.TrimResult, error) {
	opt, err := r.options(true)
	if err != nil {
		return nil, err
	}
	if malloc.WillPause(r.PID, opt) {
		r.warn("memdoctor: holding one thread of pid %d to give its allocator's free memory back (malloc_trim(0), or jemalloc's or tcmalloc's own call)\n", r.PID)
	}
	res, err := malloc.Trim(ctx, r.PID, opt)
	if res != nil {
		r.pauseLine(res.Pause)
	}
	return res, err
}

// pauseLine says how long memdoctor held a thread of the process.
func pauseLine(pid int, p *malloc.Pause) string {
	others := "it has no other threads"
	if n := p.Threads - 1; n > 0 {
		others = "its other " + count(n, "thread", "threads") + " ran throughout"
	}
	return fmt.Sprintf("thread %d of pid %d was held %.1f ms (%.1f ms of it in %s; %s); %s",
		p.Thread, pid, p.AttachedMs, p.CallsMs, count(len(p.Calls), "call", "calls"), p.Why, others)
}

// count is "1 thread", "2 threads".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
