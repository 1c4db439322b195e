//go:build !linux || !amd64

package inject

import (
	"context"
	"debug/elf"
	"fmt"
	"runtime"
	"time"
)

// Supported reports whether this build can call into processes.
const Supported = false

const nativeMachine = elf.EM_NONE

// Stop describes where the thread was stopped.
type Stop struct {
	PC, SP  uint64
	Syscall int
	Restart bool
}

// Session is not available on this architecture.
type Session struct {
	Calls []Call
	Held  time.Duration
}

func unsupported() error {
	return fmt.Errorf("%w: calling into a process is implemented for Linux on x86-64 only (this is %s/%s)", ErrUnsupported, runtime.GOOS, runtime.GOARCH)
}

// With is refused on this architecture.
func With(pid, tid int, opt Options, fn func(*Session) error) (*Session, error) {
	return nil, unsupported()
}

// Attach is refused on this architecture.
func Attach(pid, tid int, opt Options) (*Session, error) { return nil, unsupported() }

// Run runs fn.
func (s *Session) Run(fn func()) { fn() }

// Stop is the zero Stop.
func (s *Session) Stop() Stop { return Stop{Syscall: -1} }

// Reposition is refused.
func (s *Session) Reposition(d time.Duration) error { return unsupported() }

// Read is refused.
func (s *Session) Read(addr uint64, p []byte) error { return unsupported() }

// Write is refused.
func (s *Session) Write(addr uint64, p []byte) error { return unsupported() }

// Call is refused.
func (s *Session) Call(ctx context.Context, name string, fn uint64, args ...uint64) (uint64, error) {
	return 0, unsupported()
}

// CallNested is refused on this architecture.
func (s *Session) CallNested(ctx context.Context, name string, fn uint64, args ...uint64) (uint64, error) {
	return 0, unsupported()
}

// Detach does nothing.
func (s *Session) Detach() error { return nil }

// WindDown marks the calls that follow as cleanup (no calls are made here).
func (s *Session) WindDown() {}

// Canary is refused.
func Canary() error { return unsupported() }

// CanaryReport is empty.
func CanaryReport() string { return "" }

// SleepRestart is false: no thread is stopped on this architecture.
func SleepRestart(pid, tid int) bool { return false }
