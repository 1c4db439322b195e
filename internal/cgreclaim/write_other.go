//go:build !linux

package cgreclaim

import (
	"errors"
	"time"
)

// writeReclaim needs Linux's memory.reclaim.
func writeReclaim(file string, bytes int64, limit time.Duration) error {
	return errors.New("memory.reclaim is a Linux cgroup v2 file")
}
