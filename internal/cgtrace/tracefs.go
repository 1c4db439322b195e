package cgtrace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/memdoctor/memdoctor/internal/procfs"
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

// tracefsTracer reads the same tracepoints through a tracing instance of
// its own (so it neither sees nor disturbs other users of tracefs), removed
// when closed.
type tracefsTracer struct {
	inst    string
	fd      int
	buf     []byte
	partial []byte
	lost    int64 // overruns at the last take
	// comms names the processes that executed a program during the
	// trace, by pid: tracefs prints a task's name from a small cache of
	// recent names (saved_cmdlines) and "<...>" once a busy host has
	// pushed it out, so the name is kept from the exec event instead.
	comms map[int]string
	proc  procfs.FS // for names of the living
}

// unknownComm is what tracefs prints for a task whose name it no longer
// holds.
const unknownComm = "<...>"

// maxComms bounds comms: past it the map is emptied and refilled.
const maxComms = 1 << 16

func loadTracefs(opt Options) (*tracefsTracer, error) {
	root, err := findTracefs(opt)
	if err != nil {
		return nil, err
	}
	t := &tracefsTracer{inst: filepath.Join(root, "instances", fmt.Sprintf("memdoctor-cgtrace-%d", os.Getpid())), fd: -1,
		comms: map[int]string{}, proc: procfs.NewProcFS(opt.Proc)}
	if err := os.Mkdir(t.inst, 0o700); err != nil {
		return nil, fmt.Errorf("creating a tracing instance: %w", err)
	}
	for _, ev := range []string{"cgroup_mkdir", "cgroup_rmdir"} {
		if err := os.WriteFile(filepath.Join(t.inst, "events", "cgroup", ev, "enable"), []byte("1"), 0); err != nil {
			t.Close()
			return nil, fmt.Errorf("enabling %s: %w", ev, err)
		}
	}
	// The exec event only names tasks (older kernels may lack it).
	_ = os.WriteFile(filepath.Join(t.inst, "events", "sched", "sched_process_exec", "enable"), []byte("1"), 0)
	t.fd, err = syscall.Open(filepath.Join(t.inst, "trace_pipe"), syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("opening trace_pipe: %w", err)
	}
	t.buf = make([]byte, 256<<10)
	return t, nil
}

// Close turns the events off (rmdir refuses a busy instance) and removes
// the instance.
func (t *tracefsTracer) Close() {
	if t.fd >= 0 {
		_ = syscall.Close(t.fd)
	}
	_ = os.WriteFile(filepath.Join(t.inst, "events", "enable"), []byte("0"), 0)
	_ = os.Remove(t.inst)
}

// drain reads what the pipe holds.
func (t *tracefsTracer) drain(add func(Event)) error {
	for {
		n, err := syscall.Read(t.fd, t.buf)
		if n > 0 {
			t.partial = append(t.partial, t.buf[:n]...)
			i := bytes.LastIndexByte(t.partial, '\n')
			if i >= 0 {
				for _, line := range strings.Split(string(t.partial[:i]), "\n") {
					if pid, comm, ok := parseExecLine(line); ok {
						t.remember(pid, comm)
						continue
					}
					if e, ok := parseTraceLine(line); ok {
						if e.Comm == unknownComm {
							e.Comm = t.commOf(e.PID)
						}
						add(e)
					}
				}
				t.partial = append(t.partial[:0], t.partial[i+1:]...)
			}
			continue
		}
		if err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("reading trace_pipe: %w", err)
		}
		return nil
	}
}

// commOf names a task tracefs printed as "<...>": by the program it
// executed during the trace, else by its name now if it still lives (kept
// for its later events), else "<...>" it stays.
func (t *tracefsTracer) commOf(pid int) string {
	if c, ok := t.comms[pid]; ok {
		return c
	}
	c, err := t.proc.ProcComm(pid)
	if err != nil || c == "" {
		return unknownComm
	}
	t.remember(pid, c) // read once for a task's many events
	return c
}

// remember names pid c, within maxComms.
func (t *tracefsTracer) remember(pid int, c string) {
	if len(t.comms) >= maxComms {
		clear(t.comms)
	}
	t.comms[pid] = c
}

// parseExecLine reads a sched_process_exec line:
//
//	<...>-4242    [001] ..... 1234.5678: sched_process_exec: filename=/usr/bin/jobrunner pid=4242 old_pid=4242
//
// and returns the pid and the name the kernel gives the task, the file's
// base name cut to 15 bytes (the kernel's name length less its NUL).
func parseExecLine(line string) (int, string, bool) {
	_, rest, ok := strings.Cut(line, ": sched_process_exec: filename=")
	if !ok {
		return 0, "", false
	}
	p := strings.LastIndex(rest, " pid=")
	if p < 0 {
		return 0, "", false
	}
	file := rest[:p]
	f := strings.Fields(rest[p+len(" pid="):])
	if len(f) == 0 {
		return 0, "", false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	comm := file[strings.LastIndexByte(file, '/')+1:]
	if len(comm) > 15 {
		comm = comm[:15]
	}
	if comm == "" {
		return 0, "", false
	}
	return pid, comm, true
}

// take adds the events lost since the last take.
func (t *tracefsTracer) take(s *Summary) {
	lost := lostTracefs(t.inst)
	s.Dropped = lost - t.lost
	t.lost = lost
	s.Notes = append(s.Notes, "traced with tracefs: reclaim stalls and the removed cgroups' age are traced with BPF only")
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
