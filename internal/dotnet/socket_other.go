//go:build !linux

package dotnet

import (
	"context"
	"errors"
	"net"
)

// Endpoint is a process' diagnostics socket (Linux only).
type Endpoint struct {
	PID  int
	Path string
}

var errLinux = errors.New("reading a .NET process through its diagnostics port is Linux only")

// Find is Linux only.
func Find(pid int) (*Endpoint, error) { return nil, errLinux }

// Close does nothing.
func (e *Endpoint) Close() error { return nil }

// Dial is Linux only.
func (e *Endpoint) Dial(ctx context.Context) (net.Conn, error) { return nil, errLinux }
