package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/heapprof"
)

// needBPF skips where uprobes cannot be loaded: the tests run as root on a
// kernel with uprobe events, or not at all.
func needBPF(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("leaks --ebpf needs root")
	}
	if _, err := os.Stat("/sys/bus/event_source/devices/uprobe"); err != nil {
		t.Skip("no uprobe events in this kernel")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
}

// plainWorkload is testdata/programs/leak_workload.c started WITHOUT the
// preload library.
type plainWorkload struct{ *workloadPipe }

func buildLeakWorkload(t *testing.T) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "testdata", "programs", "leak_workload.c")
	return buildOnce(t, "leak_workload-fp", func(dir string) (string, error) {
		return gcc(filepath.Join(dir, "leak_workload"), src, "-O1", "-fno-omit-frame-pointer", "-pthread")
	})
}

func startPlainWorkload(t *testing.T, bin string) *plainWorkload {
	t.Helper()
	return &plainWorkload{startPipe(t, exec.Command(bin))}
}

// exit ends the workload and returns its exit code.
func (w *plainWorkload) exit(t *testing.T) int {
	t.Helper()
	if _, err := fmt.Fprintln(w.in, "exit"); err != nil {
		t.Fatal(err)
	}
	for w.out.Scan() {
		w.lines = append(w.lines, w.out.Text())
	}
	err := w.cmd.Wait()
	if err != nil && w.cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return w.cmd.ProcessState.ExitCode()
}

// startedWriter is leaks' stderr: it says when sampling has started.
type startedWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	started chan struct{}
	once    sync.Once
}

func (s *startedWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if strings.Contains(s.buf.String(), "sampling pid") {
		s.once.Do(func() { close(s.started) })
	}
	return len(p), nil
}

func (s *startedWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

type ebpfRun struct {
	stderr *startedWriter
	done   chan struct{}
	out    string
	code   int
}

// startLeaksEBPF runs `memdoctor leaks PID --ebpf ARGS...` and waits until
// sampling has started.
func startLeaksEBPF(t *testing.T, pid int, args ...string) *ebpfRun {
	t.Helper()
	r := &ebpfRun{stderr: &startedWriter{started: make(chan struct{})}, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		var o bytes.Buffer
		r.code = run(append([]string{"leaks", strconv.Itoa(pid), "--ebpf"}, args...), &o, r.stderr)
		r.out = o.String()
	}()
	select {
	case <-r.stderr.started:
	case <-r.done:
		t.Fatalf("leaks --ebpf exited %d before sampling: %s", r.code, r.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("leaks --ebpf did not start sampling in 60 s: %s", r.stderr)
	}
	return r
}

func (r *ebpfRun) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("leaks --ebpf did not end")
	}
	if r.code != 0 {
		t.Fatalf("leaks --ebpf exited %d: %s%s", r.code, r.out, r.stderr)
	}
}

// A process started without the library, probed for a few seconds: the
// leaking call path is the top site by bytes in use and by growth, with
// the bytes the workload leaked while the probes were attached (within
// 10%: at one sample per 32 KiB, 48 MiB is ~1500 samples, a relative
// standard error of 2.6%, so 10% is ~4 standard errors); what it leaked
// before is not seen; the healthy path, which allocates as much through
// every allocation function and frees it, is listed nowhere; go tool pprof
// reads the profile and names parse_record first.
func TestLeaksEBPFFindsTheLeakingSite(t *testing.T) {
	needBPF(t)
	w := startPlainWorkload(t, buildLeakWorkload(t))
	before := w.leak(t, 8)
	pb := filepath.Join(t.TempDir(), "heap.pb.gz")
	r := startLeaksEBPF(t, w.cmd.Process.Pid, "--json", "--duration", "6s", "--rate", "32KiB", "--output", pb)
	after := w.leak(t, 48)
	r.wait(t)
	want := after - before
	var rep heapprof.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("leaks --json: %v\n%s", err, r.out)
	}
	if !strings.Contains(r.stderr.String(), "a probe hit costs") || !strings.Contains(r.stderr.String(), "caps: 6s") {
		t.Errorf("no overhead estimate and caps printed before sampling:\n%s", r.stderr)
	}
	if rep.Source != "ebpf" || len(rep.Sites) == 0 {
		t.Fatalf("report %+v", rep)
	}
	top := rep.Sites[0]
	if w := []string{"parse_record", "ingest_batch", "worker_main"}; len(top.Stack) < 3 || !slices.Equal(top.Stack[:3], w) {
		t.Errorf("top site %v, want %v first", top.Stack, w)
	}
	if !within(top.InUseBytes, want, 0.10) {
		t.Errorf("top site holds %d bytes, the workload leaked %d during the trace (want within 10%%)", top.InUseBytes, want)
	}
	if len(rep.Growth) == 0 || rep.Growth[0].Stack[0] != "parse_record" || !within(rep.Growth[0].GrowthBytes, want, 0.10) {
		t.Errorf("growth %+v, want parse_record first with about %d bytes", rep.Growth, want)
	}
	for _, s := range append(rep.Growth, rep.Sites...) {
		if slices.Contains(s.Stack, "scratch_buffer") {
			t.Errorf("the healthy path is listed: %+v", s)
		}
	}
	// The healthy path was sampled (its allocations count as allocated),
	// and freed: it is in the profile with nothing in use.
	p, err := os.ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("parse_record: %d bytes in use, the workload leaked %d in the trace; %d samples; profile %d bytes",
		top.InUseBytes, want, rep.Samples, len(p))

	out, err := exec.Command("go", "tool", "pprof", "-top", pb).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	var first []string
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") && i+1 < len(lines) {
			first = strings.Fields(lines[i+1])
			break
		}
	}
	if len(first) == 0 || first[len(first)-1] != "parse_record" {
		t.Errorf("go tool pprof -top: want parse_record first:\n%s", out)
	}
	out, err = exec.Command("go", "tool", "pprof", "-top", "-sample_index=alloc_space", pb).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "scratch_buffer") {
		t.Errorf("go tool pprof -top -sample_index=alloc_space: the healthy path's allocations are missing (%v):\n%s", err, out)
	}
}

// libcEntry reads the first byte of malloc in process pid's memory and in
// its libc file: they differ while a uprobe is in place.
func libcEntry(t *testing.T, pid int) (inMemory, inFile byte) {
	t.Helper()
	mapsData, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	type mapping struct {
		start, end, off uint64
		path            string
	}
	var libc []mapping
	for _, l := range strings.Split(string(mapsData), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || filepath.Base(f[5]) != "libc.so.6" {
			continue
		}
		var m mapping
		if _, err := fmt.Sscanf(f[0], "%x-%x", &m.start, &m.end); err != nil {
			t.Fatal(err)
		}
		m.off, _ = strconv.ParseUint(f[2], 16, 64)
		m.path = f[5]
		libc = append(libc, m)
	}
	if len(libc) == 0 {
		t.Fatalf("pid %d maps no libc.so.6", pid)
	}
	path := fmt.Sprintf("/proc/%d/root%s", pid, libc[0].path)
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ef.Close() }()
	syms, err := ef.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var off uint64
	for _, s := range syms {
		if s.Name != "malloc" {
			continue
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				off = s.Value - p.Vaddr + p.Off
			}
		}
	}
	if off == 0 {
		t.Fatal("no malloc in libc.so.6")
	}
	var addr uint64
	for _, m := range libc {
		if off >= m.off && off < m.off+(m.end-m.start) {
			addr = m.start + off - m.off
		}
	}
	if addr == 0 {
		t.Fatal("malloc is not mapped")
	}
	b := make([]byte, 1)
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	if _, err := file.ReadAt(b, int64(off)); err != nil {
		t.Fatal(err)
	}
	inFile = b[0]
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mem.Close() }()
	if _, err := mem.ReadAt(b, int64(addr)); err != nil {
		t.Fatal(err)
	}
	return b[0], inFile
}

// probeFDs counts this process' perf event and BPF descriptors (the
// uprobes and the programs behind them).
func probeFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if l == "anon_inode:[perf_event]" || strings.HasPrefix(l, "anon_inode:bpf") {
			n++
		}
	}
	return n
}

// The traced program prints what it prints untraced and exits as it does;
// while sampling, malloc's first byte in its memory is the probe's
// breakpoint, and after the trace it is libc's again and memdoctor holds no
// perf event or BPF descriptor; the target's exit ends a trace early.
func TestLeaksEBPFLeavesTheTargetAsItWas(t *testing.T) {
	needBPF(t)
	bin := buildLeakWorkload(t)
	ref := startPlainWorkload(t, bin)
	ref.leak(t, 4)
	ref.leak(t, 4)
	ref.leak(t, 4)
	refCode := ref.exit(t)

	w := startPlainWorkload(t, bin)
	pid := w.cmd.Process.Pid
	w.leak(t, 4) // it runs (its exec is done)
	fds := probeFDs(t)
	if m, f := libcEntry(t, pid); m != f {
		t.Fatalf("malloc starts with %#x in memory, %#x in the file, before any probe", m, f)
	}
	r := startLeaksEBPF(t, pid, "--duration", "3s")
	if m, f := libcEntry(t, pid); m == f {
		t.Errorf("while sampling, malloc's first byte is libc's (%#x): no probe in place?", m)
	}
	if n := probeFDs(t); n <= fds {
		t.Errorf("while sampling, %d perf event/BPF descriptors, %d before", n, fds)
	}
	w.leak(t, 4)
	r.wait(t)
	if m, f := libcEntry(t, pid); m != f {
		t.Errorf("after the trace, malloc starts with %#x in memory, %#x in the file: a probe left behind", m, f)
	}
	if n := probeFDs(t); n != fds {
		t.Errorf("after the trace, %d perf event/BPF descriptors, %d before", n, fds)
	}
	if !strings.Contains(r.out, "the trace ended: duration") {
		t.Errorf("report:\n%s", r.out)
	}

	// The target's exit ends a long trace at once.
	r = startLeaksEBPF(t, pid, "--duration", "5m")
	w.leak(t, 4)
	began := time.Now()
	code := w.exit(t)
	r.wait(t)
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("the trace ran %s after the target exited", d)
	}
	if !strings.Contains(r.out, "the trace ended: target exited") {
		t.Errorf("report:\n%s", r.out)
	}
	if n := probeFDs(t); n != fds {
		t.Errorf("after the second trace, %d perf event/BPF descriptors, %d before", n, fds)
	}
	if code != refCode || !slices.Equal(w.lines, ref.lines) {
		t.Errorf("traced: exit %d, printed %q; untraced: exit %d, printed %q", code, w.lines, refCode, ref.lines)
	}
}
