package inject

import (
	"errors"
	"time"
)

// Errors, to be classified with errors.Is.
var (
	ErrUnsupported  = errors.New("unsupported")
	ErrProcessGone  = errors.New("no such process")
	ErrPtraceDenied = errors.New("ptrace denied")
	ErrStopped      = errors.New("process is stopped")
	ErrTraced       = errors.New("thread is already traced")
	ErrTimeout      = errors.New("timed out")
	ErrCallFaulted  = errors.New("call faulted")
	ErrCanary       = errors.New("canary failed")
	ErrNoSymbol     = errors.New("symbol not found")
	ErrSeccomp      = errors.New("seccomp sandbox")
)

// Options bound a session.
type Options struct {
	// Timeout bounds the whole session from Attach (default 10 s). After
	// it no call starts; a running call waiting on a lock is interrupted
	// and undone; a busy call is waited for (see CallGrace).
	Timeout time.Duration
	// CallGrace: a busy call still running this long past Timeout makes
	// OnStuck be called once; the call is still waited for (default 2 min).
	CallGrace time.Duration
	// OnStuck receives a sentence for the operator (may be nil).
	OnStuck func(msg string)
	// Syscalls are every system call the calls of the session may make.
	// A thread under a seccomp filter is called into only when each of
	// them is proven allowed by every filter (see seccomp.go); with none
	// declared, such a thread is refused. A thread in seccomp strict mode
	// is always refused.
	Syscalls []Syscall
	// ownChild: the thread is memdoctor's own canary, which runs under
	// memdoctor's own filters, if any, and makes no system call in its
	// call.
	ownChild bool
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.CallGrace <= 0 {
		o.CallGrace = 2 * time.Minute
	}
	return o
}

// Call records one call made in the target.
type Call struct {
	Addr     uint64        `json:"-"`
	Name     string        `json:"function"`
	Duration time.Duration `json:"-"`
}
