//go:build linux

package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// Reclaim asks the kernel to reclaim bytes from the cgroup whose directory
// is dir (an absolute path): one write to its memory.reclaim (cgroup v2,
// kernel 5.19+), bounded by limit as writeControl says.
func Reclaim(dir string, bytes int64, limit time.Duration) error {
	return writeControl(filepath.Join(dir, "memory.reclaim"), bytes, limit)
}

// ForceEmpty asks a cgroup v1 memory cgroup (dir, an absolute path) to
// drop every page it is charged for: a write of 0 to memory.force_empty,
// bounded by limit.
func ForceEmpty(dir string, limit time.Duration) error {
	return writeControl(filepath.Join(dir, "memory.force_empty"), 0, limit)
}

// writeControl writes one request to a cgroup's control file. The kernel keeps
// reclaiming while it makes any progress, which can last minutes; past
// limit the writing thread is sent SIGURG (the Go runtime's own preemption
// signal, harmless), on which the kernel stops and write returns EINTR.
func writeControl(file string, bytes int64, limit time.Duration) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	buf := []byte(strconv.FormatInt(bytes, 10))
	tid := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		// The thread is signalled by id: keep the goroutine on it (the
		// thread ends with the goroutine, never reused).
		runtime.LockOSThread()
		tid <- syscall.Gettid()
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			_, werr = syscall.Write(int(fd), buf)
			return true
		}); err != nil {
			werr = err
		}
		done <- werr
	}()
	t := <-tid
	timer := time.NewTimer(max(limit, 0))
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("write %d to %s: %w", bytes, file, err)
			}
			return nil
		case <-timer.C:
			_ = syscall.Tgkill(os.Getpid(), t, syscall.SIGURG)
			timer.Reset(100 * time.Millisecond)
		}
	}
}
