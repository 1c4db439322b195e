package main

// Allocator retention seen without pausing anything: the workload runs with
// memdoctor's preload library writing its allocator stats, and `check`
// reads them. The hoarding workload is classified allocator_hoarding; the
// healthy one is not.

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

func TestCheckClassifiesAllocatorRetention(t *testing.T) {
	bin := buildWorkload(t)
	lib, errOut, code := runCLI(t, "preload", "--print-path")
	if code != 0 {
		t.Fatalf("preload --print-path: %s", errOut)
	}
	lib = strings.TrimSpace(lib)
	dir := t.TempDir()
	for _, c := range []struct {
		mode, mib string
		fire      bool
	}{{"hoard", "64", true}, {"healthy", "2", false}} {
		stats := filepath.Join(dir, c.mode+".jsonl")
		w := startWorkload(t, bin, []string{"LD_PRELOAD=" + lib, "MEMDOCTOR_STATS=" + stats, "MEMDOCTOR_STATS_INTERVAL=200ms"},
			c.mode, "8", c.mib, "4")
		// Wait for two summaries written after the workload settled (it
		// said "ready"): under load its rounds outlast several summary
		// periods, and a summary from before the frees shows no hoard.
		settled := 0
		if b, err := os.ReadFile(stats); err == nil {
			settled = strings.Count(string(b), `"summary"`)
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(stats); err == nil && strings.Count(string(b), `"summary"`) >= settled+2 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Only its own workload: on a busy host it need not be among the
		// largest processes.
		r := checkJSON(t, "--top", "20", "--pid", w.pid())
		var hit bool
		for _, f := range r.Findings {
			if f.ID == "allocator_hoarding" && strings.Contains(f.Subject, "pid "+w.pid()) {
				hit = true
				if v, ok := evidence(&f, "retained_bytes"); !ok || v < 256<<20 {
					t.Errorf("%s: retained %v", c.mode, v)
				}
			}
		}
		if hit != c.fire {
			t.Errorf("%s: allocator_hoarding fired=%v, want %v; findings %+v", c.mode, hit, c.fire, r.Findings)
		}
		_ = w.do(t, "info") // unpaused, still answering
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// buildWorkload compiles testdata/programs/alloc_workload.c.
func buildWorkload(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	src := filepath.Join(repoRoot(t), "testdata", "programs", "alloc_workload.c")
	return buildOnce(t, "alloc_workload", func(dir string) (string, error) {
		return gcc(filepath.Join(dir, "alloc_workload"), src, "-O1", "-lpthread")
	})
}

// workload is a running alloc_workload.
type workload struct {
	cmd   *exec.Cmd
	stdin io.Writer
	out   *bufio.Reader
}

func startWorkload(t *testing.T, bin string, env []string, args ...string) *workload {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workload{cmd: cmd, stdin: stdin, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	if _, err := w.out.ReadString('\n'); err != nil {
		t.Fatalf("%v did not become ready: %v", args, err)
	}
	return w
}

// do sends one command and waits for the workload's report line.
func (w *workload) do(t *testing.T, command string) string {
	t.Helper()
	if _, err := io.WriteString(w.stdin, command+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := w.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return line
}

func (w *workload) pid() string { return itoa(w.cmd.Process.Pid) }

// TestCheckMallocPausesToRead: without the preload library, check --malloc
// calls malloc_info inside the processes and classifies the hoarding
// workload; the healthy one stays quiet, and both are running afterwards.
func TestCheckMallocPausesToRead(t *testing.T) {
	requirePtraceHere(t)
	bin := buildWorkload(t)
	hoard := startWorkload(t, bin, nil, "hoard", "8", "64", "4")
	healthy := startWorkload(t, bin, nil, "healthy", "8", "2", "4")
	// --malloc reads the largest glibc processes check selects: only the
	// test's two (a busy host has larger ones).
	out, errOut, code := runCLI(t, "check", "--json", "--top", "30", "--malloc", "4", "--pid", hoard.pid()+","+healthy.pid())
	if code != 0 {
		t.Fatalf("check --malloc: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "pid "+hoard.pid()) || !strings.Contains(errOut, "held briefly") {
		t.Errorf("check --malloc did not say it pauses pid %s: %q", hoard.pid(), errOut)
	}
	var r model.Report
	if err := jsonUnmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	fired := map[string]*model.Finding{}
	for i, f := range r.Findings {
		if f.ID == "allocator_hoarding" {
			for _, w := range []*workload{hoard, healthy} {
				if strings.Contains(f.Subject, "pid "+w.pid()+")") {
					fired[w.pid()] = &r.Findings[i]
				}
			}
		}
	}
	f := fired[hoard.pid()]
	if f == nil {
		t.Fatalf("allocator_hoarding did not fire on the hoarding workload; findings %+v notes %+v", r.Findings, r.Notes)
	}
	if fired[healthy.pid()] != nil {
		t.Errorf("allocator_hoarding fired on the healthy workload: %s", fired[healthy.pid()].Summary)
	}
	// The workload's own mallinfo2: free bytes it holds in its arenas.
	self := parseReady(t, hoard.do(t, "info"))
	retained, _ := evidence(f, "retained_bytes")
	if retained < 0.8*self["fordblks"] || retained > 1.05*self["fordblks"] {
		t.Errorf("retained %.0f, the workload's own fordblks %.0f: want within 80..105%%", retained, self["fordblks"])
	}
	_ = healthy.do(t, "info") // still running, still answering
	t.Logf("hoard: %s", f.Summary)
}

// parseReady reads the numbers of a workload's "ready {...}" line.
func parseReady(t *testing.T, line string) map[string]float64 {
	t.Helper()
	var m map[string]float64
	if err := jsonUnmarshal(strings.TrimPrefix(strings.TrimSpace(line), "ready "), &m); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return m
}

// TestAllocatorRecordingsClassified records three real workloads running
// under the preload library side by side, time-compressed ×900 (40 s = 10
// h), and diagnoses the recording:
//   - leak: every 2 s one more round in 4 threads, nothing freed: the
//     in-use heap grows with RSS → process_leak;
//   - hoard: every 4 s one more thread (and so arena) reaches its peak and
//     frees all but 1/32, scattered: RSS grows, in-use hardly →
//     allocator_hoarding, and process_memory_growth says "retention";
//   - healthy: rounds that free everything: neither.
func TestAllocatorRecordingsClassified(t *testing.T) {
	skipShort(t)
	requireLinuxRoot(t)
	t.Parallel() // 40 s of recording its own processes
	bin := buildWorkload(t)
	lib, errOut, code := runCLI(t, "preload", "--print-path")
	if code != 0 {
		t.Fatalf("preload --print-path: %s", errOut)
	}
	dir := t.TempDir()
	env := func(name string) []string {
		return []string{"LD_PRELOAD=" + strings.TrimSpace(lib), "MEMDOCTOR_STATS=" + filepath.Join(dir, name+".jsonl"),
			"MEMDOCTOR_STATS_INTERVAL=250ms"}
	}
	db := filepath.Join(dir, "alloc.db")
	r := startRecorder(t, db, 500*time.Millisecond, "--top", "40")
	leak := startWorkload(t, bin, env("leak"), "leak", "4", "4", "1")
	hoard := startWorkload(t, bin, env("hoard"), "hoard", "1", "32", "1")
	healthy := startWorkload(t, bin, env("healthy"), "healthy", "4", "2", "1")
	start := time.Now()
	for i := 1; time.Since(start) < 40*time.Second; i++ {
		time.Sleep(time.Second)
		if i%2 == 0 {
			leak.do(t, "more")
			healthy.do(t, "more")
		}
		if i%4 == 0 {
			hoard.do(t, "spawn")
		}
	}
	time.Sleep(time.Second) // the last stats into the recording
	r.stop(t)
	self := map[string]map[string]float64{}
	for name, w := range map[string]*workload{"leak": leak, "hoard": hoard, "healthy": healthy} {
		self[name] = parseReady(t, w.do(t, "info"))
	}

	z := strings.TrimSuffix(db, ".db") + "-x900.db"
	compress(t, db, z, 900)
	rep := diagnoseJSON(t, z)
	got := func(id string, w *workload) *model.Finding {
		for i, f := range rep.Findings {
			if f.ID == id && strings.Contains(f.Subject, "pid "+w.pid()+")") {
				return &rep.Findings[i]
			}
		}
		return nil
	}
	want := []struct {
		name string
		w    *workload
		ids  map[string]bool
	}{
		{"leak", leak, map[string]bool{"process_leak": true, "process_memory_growth": true, "allocator_hoarding": false}},
		{"hoard", hoard, map[string]bool{"process_leak": false, "process_memory_growth": true, "allocator_hoarding": true}},
		{"healthy", healthy, map[string]bool{"process_leak": false, "process_memory_growth": false, "allocator_hoarding": false}},
	}
	for _, c := range want {
		for id, fire := range c.ids {
			f := got(id, c.w)
			if (f != nil) != fire {
				t.Errorf("%s: %s fired=%v, want %v (%v)", c.name, id, f != nil, fire, f)
				continue
			}
			if f != nil {
				t.Logf("%s: %s: %s", c.name, id, f.Summary)
			}
		}
	}
	if f := got("process_memory_growth", leak); f != nil && !strings.Contains(f.Summary, "leak") {
		t.Errorf("leak: process_memory_growth does not say leak: %s", f.Summary)
	}
	if f := got("process_memory_growth", hoard); f != nil && !strings.Contains(f.Summary, "retention") {
		t.Errorf("hoard: process_memory_growth does not say retention: %s", f.Summary)
	}
	// The leak's in-use growth against what the workload says of itself:
	// 4 threads × 4 MiB a round, about 20 rounds.
	if f := got("process_leak", leak); f != nil {
		g, _ := evidence(f, "in_use_growth_bytes")
		if inUse := self["leak"]["uordblks"]; g < 0.5*inUse || g > 1.1*inUse {
			t.Errorf("leak: in-use growth %.0f against the workload's own in-use %.0f", g, inUse)
		}
	}
	if f := got("allocator_hoarding", hoard); f != nil {
		if v, _ := evidence(f, "retained_bytes"); v < 0.8*self["hoard"]["fordblks"] {
			t.Errorf("hoard: retained %.0f, the workload's own fordblks %.0f", v, self["hoard"]["fordblks"])
		}
	}
}

// TestCheckReadsStatsPathWithPid: the stats path `memdoctor preload`
// recommends holds %p, which the library expands to the pid; check reads
// the expanded file and reports the hoarding workload, with remedies that
// do not ask it to load the library it runs. A workload whose path the
// library refuses is named in a note, and the advice to run the library is
// not addressed to it.
func TestCheckReadsStatsPathWithPid(t *testing.T) {
	bin := buildWorkload(t)
	lib, errOut, code := runCLI(t, "preload", "--print-path")
	if code != 0 {
		t.Fatalf("preload --print-path: %s", errOut)
	}
	lib = strings.TrimSpace(lib)
	dir := t.TempDir()

	bad := startWorkload(t, bin, []string{"LD_PRELOAD=" + lib, "MEMDOCTOR_STATS=" + filepath.Join(dir, "trim.%d.jsonl")}, "hoard", "2", "16", "1")
	r := checkJSON(t, "--top", "40", "--pid", bad.pid())
	tag := "(pid " + bad.pid() + ")"
	var perProcess bool
	for _, n := range r.Notes {
		if strings.Contains(n.Message, tag+" runs memdoctor's preload library with a MEMDOCTOR_STATS it refuses") {
			perProcess = true
		}
		if strings.Contains(n.Source, "allocator_hoarding") && strings.Contains(n.Message, "not evaluated") {
			// named among the processes that already run it (others' may be too)
			named, already := strings.Index(n.Fix, tag), strings.Index(n.Fix, " already run")
			if named < 0 || already < named || !strings.Contains(n.Fix, "memdoctor's preload library, but") {
				t.Errorf("the advice to run the preload library does not say pid %s already runs it: %q", bad.pid(), n.Fix)
			}
		}
	}
	if !perProcess {
		t.Errorf("no note on pid %s's refused stats path: %+v", bad.pid(), r.Notes)
	}

	stats := filepath.Join(dir, "trim.%p.jsonl")
	w := startWorkload(t, bin, []string{"LD_PRELOAD=" + lib, "MEMDOCTOR_STATS=" + stats, "MEMDOCTOR_STATS_INTERVAL=200ms"},
		"hoard", "8", "64", "4")
	own := filepath.Join(dir, "trim."+w.pid()+".jsonl")
	// two summaries written after it said "ready"
	settled := 0
	if b, err := os.ReadFile(own); err == nil {
		settled = strings.Count(string(b), `"summary"`)
	} else {
		t.Fatalf("the library did not write %s: %v", own, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(own); err == nil && strings.Count(string(b), `"summary"`) >= settled+2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r = checkJSON(t, "--top", "40", "--pid", w.pid())
	var f *model.Finding
	for i := range r.Findings {
		if r.Findings[i].ID == "allocator_hoarding" && strings.Contains(r.Findings[i].Subject, "(pid "+w.pid()+")") {
			f = &r.Findings[i]
		}
	}
	if f == nil {
		t.Fatalf("allocator_hoarding did not fire on pid %s with MEMDOCTOR_STATS=%s; findings %+v notes %+v", w.pid(), stats, r.Findings, r.Notes)
	}
	self := parseReady(t, w.do(t, "info"))
	if v, _ := evidence(f, "retained_bytes"); v < 0.8*self["fordblks"] {
		t.Errorf("retained %.0f, the workload's own fordblks %.0f", v, self["fordblks"])
	}
	for _, rem := range f.Remedies {
		for _, c := range rem.Commands {
			if strings.Contains(c, "LD_PRELOAD=$(memdoctor preload") {
				t.Errorf("remedy %q asks pid %s to load the library it runs: %s", rem.Title, w.pid(), c)
			}
		}
	}
}

// TestCheckAsksFreshSummary: a process just started with the preload
// library and MEMDOCTOR_STATS (with %p and without) has written no summary
// yet (the first comes after 60 s); check asks the library for one over its
// request channel and judges the process at once, within a few seconds.
func TestCheckAsksFreshSummary(t *testing.T) {
	bin := buildWorkload(t)
	lib, errOut, code := runCLI(t, "preload", "--print-path")
	if code != 0 {
		t.Fatalf("preload --print-path: %s", errOut)
	}
	lib = strings.TrimSpace(lib)
	for _, name := range []string{"fresh.%p.jsonl", "fresh.jsonl"} {
		stats := filepath.Join(t.TempDir(), name)
		w := startWorkload(t, bin, []string{"LD_PRELOAD=" + lib, "MEMDOCTOR_STATS=" + stats}, "hoard", "8", "64", "4")
		start := time.Now()
		r := checkJSON(t, "--top", "40")
		took := time.Since(start)
		tag := "(pid " + w.pid() + ")"
		for _, n := range r.Notes {
			if strings.Contains(n.Message, tag) && strings.Contains(n.Message, "no allocator summary yet") {
				t.Errorf("%s: %s", name, n.Message)
			}
		}
		var hit bool
		for _, f := range r.Findings {
			if f.ID == "allocator_hoarding" && strings.Contains(f.Subject, tag) {
				hit = true
			}
		}
		if !hit {
			t.Errorf("%s: allocator_hoarding did not fire on pid %s just started; findings %+v", name, w.pid(), r.Findings)
		}
		if took > 20*time.Second {
			t.Errorf("%s: check took %s", name, took)
		}
		t.Logf("%s: check took %s", name, took.Round(time.Millisecond))
		_ = w.do(t, "info") // still answering
	}
}
