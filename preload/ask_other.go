//go:build !linux

package preload

import (
	"context"
	"errors"
)

// Ask needs Linux (openat2, per-thread credentials, /proc).
func Ask(ctx context.Context, t Target, action string) (*Response, error) {
	return nil, errors.New("preload requests work on Linux only")
}

// ReadStats needs Linux (openat2, per-thread credentials, /proc).
func ReadStats(ctx context.Context, t Target, limit int64) ([]byte, error) {
	return nil, errors.New("preload stats are read on Linux only")
}
