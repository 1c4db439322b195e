package cgtrace

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// TestTracefsNamesEvictedTasks: tracefs prints "<...>" for a task whose
// name its small cache has lost (seen on a loaded host, 96 of 120 mkdirs).
// The tracer names it from the program the task executed during the trace,
// else from /proc while it lives; a task gone before either stays "<...>".
func TestTracefsNamesEvictedTasks(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := int(r.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	selfComm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	lines := []string{
		"<...>-4242    [001] ..... 1234.5678: sched_process_exec: filename=/usr/local/bin/a-very-long-jobrunner pid=4242 old_pid=4242",
		"<...>-4242    [001] ..... 1234.5679: cgroup_mkdir: root=4 id=77 level=1 path=/jobs/x",
		"<...>-" + strconv.Itoa(self) + "    [000] ..... 1234.6: cgroup_rmdir: root=4 id=77 level=1 path=/jobs/x",
		"<...>-2147483646 [000] ..... 1234.7: cgroup_mkdir: root=4 id=78 level=1 path=/jobs/y",
		"runner-99 [000] ..... 1234.8: cgroup_mkdir: root=4 id=79 level=1 path=/jobs/z",
	}
	if _, err := w.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	tr := &tracefsTracer{fd: fd, buf: make([]byte, 4096), comms: map[int]string{}, proc: procfs.NewProcFS("/proc")}
	var got []Event
	if err := tr.drain(func(e Event) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		comm string
		pid  int
		op   Op
	}{
		{"a-very-long-job", 4242, Mkdir}, // the kernel's 15 bytes
		{strings.TrimSpace(string(selfComm)), self, Rmdir},
		{unknownComm, 2147483646, Mkdir},
		{"runner", 99, Mkdir},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Comm != w.comm || got[i].PID != w.pid || got[i].Op != w.op {
			t.Errorf("event %d: %s-%d op %v, want %s-%d op %v", i, got[i].Comm, got[i].PID, got[i].Op, w.comm, w.pid, w.op)
		}
	}
}

// FuzzTraceLines: no trace_pipe line makes either parser panic, and an
// exec line yields a positive pid and a name of 1 to 15 bytes.
func FuzzTraceLines(f *testing.F) {
	f.Add("<...>-4242    [001] ..... 1234.5678: sched_process_exec: filename=/usr/bin/x pid=4242 old_pid=4242")
	f.Add("jobrunner-4242    [001] ..... 1234.5678: cgroup_mkdir: root=4 id=77 level=1 path=/jobs/x")
	f.Add(": sched_process_exec: filename= pid=")
	f.Fuzz(func(t *testing.T, line string) {
		if pid, comm, ok := parseExecLine(line); ok && (pid <= 0 || comm == "" || len(comm) > 15) {
			t.Fatalf("%q: pid %d comm %q", line, pid, comm)
		}
		_, _ = parseTraceLine(line)
	})
}
