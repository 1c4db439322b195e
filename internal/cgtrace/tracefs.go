package cgtrace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// findTracefs returns a tracefs mount that has the cgroup events.
func findTracefs(opt Options) (string, error) {
	cands := []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}
	if opt.Tracefs != "" {
		cands = []string{opt.Tracefs}
	}
	for _, d := range cands {
		if _, err := os.Stat(filepath.Join(d, "events", "cgroup", "cgroup_mkdir")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no tracefs with the cgroup events at %s (mount tracefs there)", strings.Join(cands, " or "))
}

// runTracefs reads the same tracepoints through a tracing instance of its
// own (so it neither sees nor disturbs other users of tracefs), removed
// afterwards.
func runTracefs(ctx context.Context, opt Options, agg *aggregator) (*Summary, error) {
	root, err := findTracefs(opt)
	if err != nil {
		return nil, err
	}
	inst := filepath.Join(root, "instances", fmt.Sprintf("memdoctor-cgtrace-%d", os.Getpid()))
	if err := os.Mkdir(inst, 0o700); err != nil {
		return nil, fmt.Errorf("creating a tracing instance: %w", err)
	}
	defer func() { _ = os.Remove(inst) }()
	for _, ev := range []string{"cgroup_mkdir", "cgroup_rmdir"} {
		if err := os.WriteFile(filepath.Join(inst, "events", "cgroup", ev, "enable"), []byte("1"), 0); err != nil {
			return nil, fmt.Errorf("enabling %s: %w", ev, err)
		}
	}
	// Events off before the instance goes (rmdir refuses a busy one).
	defer func() {
		_ = os.WriteFile(filepath.Join(inst, "events", "enable"), []byte("0"), 0)
	}()
	fd, err := syscall.Open(filepath.Join(inst, "trace_pipe"), syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening trace_pipe: %w", err)
	}
	defer func() { _ = syscall.Close(fd) }()
	start := time.Now()
	end := start.Add(opt.Duration)
	buf := make([]byte, 256<<10)
	var partial []byte
	for {
		stop := !time.Now().Before(end) || ctx.Err() != nil
		for {
			n, err := syscall.Read(fd, buf)
			if n > 0 {
				partial = append(partial, buf[:n]...)
				i := bytes.LastIndexByte(partial, '\n')
				if i >= 0 {
					for _, line := range strings.Split(string(partial[:i]), "\n") {
						if e, ok := parseTraceLine(line); ok {
							agg.add(e)
						}
					}
					partial = append(partial[:0], partial[i+1:]...)
				}
				continue
			}
			if err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR) {
				return nil, fmt.Errorf("reading trace_pipe: %w", err)
			}
			break
		}
		if stop {
			break
		}
		time.Sleep(min(opt.Poll, time.Until(end)))
	}
	return agg.summary("tracefs", time.Since(start), lostTracefs(inst)), nil
}

// lostTracefs sums the instance's overrun counts (events the per-CPU
// buffers had no room for).
func lostTracefs(inst string) int64 {
	var lost int64
	dirs, _ := filepath.Glob(filepath.Join(inst, "per_cpu", "cpu*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stats"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "overrun: "); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				lost += n
			}
		}
	}
	return lost
}

// parseTraceLine reads one trace_pipe line of the cgroup events:
//
//	jobrunner-4242    [001] ..... 1234.5678: cgroup_mkdir: root=4 id=77 level=1 path=/jobs/x
func parseTraceLine(line string) (Event, bool) {
	var e Event
	var rest string
	var ok bool
	head, rest, ok := strings.Cut(line, ": cgroup_mkdir: ")
	if ok {
		e.Op = Mkdir
	} else if head, rest, ok = strings.Cut(line, ": cgroup_rmdir: "); ok {
		e.Op = Rmdir
	} else {
		return e, false
	}
	br := strings.LastIndex(head, " [")
	if br < 0 {
		return e, false
	}
	task := strings.TrimSpace(head[:br])
	// An optional "(tgid)" column follows the task with record-tgid.
	if i := strings.LastIndex(task, " ("); i >= 0 && strings.HasSuffix(task, ")") {
		task = strings.TrimSpace(task[:i])
	}
	dash := strings.LastIndexByte(task, '-')
	if dash < 0 {
		return e, false
	}
	pid, err := strconv.Atoi(task[dash+1:])
	if err != nil {
		return e, false
	}
	e.Comm, e.PID = task[:dash], pid
	// Fields: root=N id=N level=N path=... (the path runs to the end).
	if p := strings.Index(rest, " path="); p >= 0 {
		e.Path = rest[p+len(" path="):]
		rest = rest[:p]
	}
	for _, f := range strings.Fields(rest) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		switch k {
		case "root":
			e.Hierarchy = n
		case "level":
			e.Level = n
		}
	}
	return e, true
}
