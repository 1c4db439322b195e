//go:build !linux

package cgroups

import (
	"errors"
	"time"
)

// Reclaim needs Linux's memory.reclaim.
func Reclaim(dir string, bytes int64, limit time.Duration) error {
	return errors.New("memory.reclaim is a Linux cgroup v2 file")
}

// ForceEmpty needs Linux's cgroup v1 memory controller.
func ForceEmpty(dir string, limit time.Duration) error {
	return errors.New("memory.force_empty is a Linux cgroup v1 file")
}
