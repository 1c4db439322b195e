package main

import (
	"bufio"
	"encoding/json"
	"fmt"
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

// dotnetVenv is where scripts/install-test-deps.sh installs the .NET Core
// 3.1 runtime (PyPI dotnetcore2) and pythonnet.
const dotnetVenv = "/opt/memdoctor-test/dotnet/bin/python"

// startDotNet starts internal/dotnet/testdata/gcload.py in mode (a Server
// GC runtime hosted by Python) and waits for its runtime.
func startDotNet(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	return startDotNetWith(t, filepath.Join(repoRoot(t), "internal", "dotnet", "testdata", "gcload.py"), mode)
}

// startDotNetWith runs the gcload.py at script with env added.
func startDotNetWith(t *testing.T, script, mode string, env ...string) *exec.Cmd {
	t.Helper()
	if out, err := exec.Command(dotnetVenv, "-c", "import dotnetcore2, pythonnet").CombinedOutput(); err != nil {
		t.Skipf("no .NET runtime for the tests (%v: %s): run scripts/install-test-deps.sh as root", err, out)
	}
	cmd := exec.Command(dotnetVenv, script, mode, "120")
	// Its diagnostics socket and debug pipes go in a directory of this
	// test's, not in /tmp, where a killed runtime leaves them behind.
	cmd.Env = append(append(os.Environ(), "TMPDIR="+t.TempDir()), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("gcload.py %s: no runtime after 60 s", mode)
	}
	return cmd
}

// A .NET process is read through its diagnostics port without any
// instrumentation: the one inducing gen2 collections and allocating on
// the LOH gets gc_induced naming GC.Collect() and its gen2 count and
// gc_large_object_allocation; an idle one gets no GC finding.
func TestRuntimeDotNetPort(t *testing.T) {
	binary(t) // built before the processes start: they live 2 minutes
	busy := startDotNet(t, "busy")
	quiet := startDotNet(t, "quiet")
	pids := fmt.Sprintf("%d,%d", busy.Process.Pid, quiet.Process.Pid)
	rep := runCheck(t, "--gc-interval", "3s", "--pid", pids)

	bp := fmt.Sprintf("(pid %d)", busy.Process.Pid)
	rt := runtimeOf(t, rep, "pid/"+strconv.Itoa(busy.Process.Pid))
	if rt.Source != "eventpipe" || rt.Runtime != "dotnet" || rt.Version != "3.1.23" {
		t.Errorf("the busy process read as %s %s from %q, want dotnet 3.1.23 from eventpipe", rt.Runtime, rt.Version, rt.Source)
	}
	fs := findingsAbout(rep, bp)
	fi := fs["gc_induced"]
	if fi == nil {
		t.Fatalf("gc_induced did not fire for the process calling GC.Collect(); findings %v, notes %v", fs, rep.Notes)
	}
	if !strings.Contains(fi.Summary, "GC.Collect() gen2") || !strings.Contains(fi.Summary, "induced by GC.Collect()") {
		t.Errorf("gc_induced does not name GC.Collect() and gen2: %s", fi.Summary)
	}
	// Every 0.1 s at most, for 3 s.
	if n, _ := evidence(fi, "induced_collections"); n < 1 || n > 40 {
		t.Errorf("%v induced collections in 3 s, the program asks for at most 30", n)
	}
	fl := fs["gc_large_object_allocation"]
	if fl == nil {
		t.Fatalf("gc_large_object_allocation did not fire for the process allocating 200 KB arrays; findings %v", fs)
	}
	if n, _ := evidence(fl, "large_triggered_gen2"); n < 3 {
		t.Errorf("%v gen2 collections triggered by large allocations: %s", n, fl.Summary)
	}
	if r, _ := evidence(fl, "loh_allocation_rate"); r < 1<<20 {
		t.Errorf("LOH allocation rate %v B/s, the program allocates 200 KB arrays in a loop", r)
	}
	// The System.Runtime counters of the same session: bytes allocated
	// over the interval (alloc-rate), and the heap of a process that ran
	// no collection in it (the generations' sizes).
	if rt.Recent == nil || rt.Recent.AllocatedBytes < 1<<20 {
		t.Errorf("allocated over the interval: %+v, want alloc-rate's MBs", rt.Recent)
	}
	// 3.1 does not answer ProcessInfo: check says so.
	said := false
	for _, n := range rep.Notes {
		said = said || strings.Contains(n.Message, fmt.Sprintf("(pid %d): the runtime answers unknown command to ProcessInfo", busy.Process.Pid))
	}
	if !said {
		t.Errorf("no note that 3.1 does not answer ProcessInfo: %+v", rep.Notes)
	}
	qp := fmt.Sprintf("(pid %d)", quiet.Process.Pid)
	qrt := runtimeOf(t, rep, "pid/"+strconv.Itoa(quiet.Process.Pid))
	if qrt.Source != "eventpipe" || qrt.Recent == nil {
		t.Errorf("the idle process read from %q with recent rates %v, want eventpipe", qrt.Source, qrt.Recent)
	}
	if qrt.HeapLiveBytes == nil || *qrt.HeapLiveBytes <= 0 {
		t.Errorf("the idle process' heap %v: the counters give it without a collection", model.OrZero(qrt.HeapLiveBytes))
	}
	for id, f := range findingsAbout(rep, qp) {
		t.Errorf("%s fired for the idle .NET process: %s", id, f.Summary)
	}
}

// gc_induced names the caller of GC.Collect(): Acme.Cache.Flush, a managed
// method (emitted at run time) for one process; pythonnet's bridge for the
// one calling it from Python. The JSON carries the counts per caller.
func TestRuntimeDotNetCaller(t *testing.T) {
	binary(t)
	flush := startDotNet(t, "flush")
	busy := startDotNet(t, "busy")
	rep := runCheck(t, "--gc-interval", "3s", "--pid", fmt.Sprintf("%d,%d", flush.Process.Pid, busy.Process.Pid))

	fi := findingsAbout(rep, fmt.Sprintf("(pid %d)", flush.Process.Pid))["gc_induced"]
	if fi == nil {
		t.Fatalf("gc_induced did not fire for the process calling GC.Collect() from Acme.Cache.Flush; notes %v", rep.Notes)
	}
	total, _ := evidence(fi, "induced_collections")
	n, _ := evidence(fi, "caller")
	want := fmt.Sprintf("induced by GC.Collect() called from Acme.Cache.Flush (%.0f of %.0f induced collections)", n, total)
	if n < 1 || n > total || !strings.Contains(fi.Summary, want) {
		t.Errorf("gc_induced: %s\nwant %q", fi.Summary, want)
	}
	if len(fi.Remedies) == 0 || !strings.Contains(fi.Remedies[0].Title, "GC.Collect() call in Acme.Cache.Flush") {
		t.Errorf("remedies %+v do not name the caller", fi.Remedies)
	}
	rt := runtimeOf(t, rep, "pid/"+strconv.Itoa(flush.Process.Pid))
	if len(rt.InducedCallers) != 1 || rt.InducedCallers["Acme.Cache.Flush"] != n {
		t.Errorf("induced_callers %v, want Acme.Cache.Flush: %v", rt.InducedCallers, n)
	}

	fb := findingsAbout(rep, fmt.Sprintf("(pid %d)", busy.Process.Pid))["gc_induced"]
	if fb == nil {
		t.Fatalf("gc_induced did not fire for the process calling GC.Collect() from Python")
	}
	if !strings.Contains(fb.Summary, "called from Python.Runtime.") || !strings.Contains(fb.Summary, "pythonnet's bridge") || strings.Contains(fb.Summary, "Acme") {
		t.Errorf("gc_induced of the Python caller: %s", fb.Summary)
	}
}

// SIGTERM ends check's GC interval early: the .NET session is stopped and
// the report is made from the seconds read.
func TestRuntimeDotNetSIGTERM(t *testing.T) {
	busy := startDotNet(t, "busy")
	rep := signalInGCInterval(t, busy.Process.Pid, syscall.SIGTERM, 4*time.Second)
	rt := runtimeOf(t, rep, "pid/"+strconv.Itoa(busy.Process.Pid))
	if rt.Source != "eventpipe" || rt.Recent == nil || rt.Recent.Seconds > 30 || rt.Recent.Old == 0 {
		t.Errorf("the busy process after SIGTERM: source %q, recent %+v", rt.Source, rt.Recent)
	}
}

// The GC settings in force are shown and fit the remedies: a process whose
// runtimeconfig.json (beside its entry script) asks for Workstation,
// non-concurrent GC and a 200 MiB heap hard limit, and whose environment
// turns Server GC on (COMPlus_gcServer, the prefix 3.1 reads), is shown
// as Server GC from that variable with the file's limit, and its
// large-object finding neither advises Server GC nor a hard limit.
func TestRuntimeDotNetSettings(t *testing.T) {
	bin := binary(t)
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "internal", "dotnet", "testdata", "gcload.py"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "gcload.py")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	busy := startDotNetWith(t, script, "busy", "GCLOAD_KEEP_CONFIG=1", "COMPlus_gcServer=1",
		`GCLOAD_PROPS={"System.GC.Server": false, "System.GC.Concurrent": false, "System.GC.HeapHardLimit": 209715200}`)
	pid := strconv.Itoa(busy.Process.Pid)
	rep := runCheck(t, "--gc-interval", "3s", "--pid", pid)
	rt := runtimeOf(t, rep, "pid/"+pid)
	s := rt.GCSettings
	if s["gc"] != "server" || s["concurrent"] != "false" || s["latency_mode"] != "Batch" ||
		!strings.Contains(s["from"], "COMPlus_gcServer") || !strings.Contains(s["from"], "gcload.runtimeconfig.json") {
		t.Errorf("GC settings %v, want Server GC from COMPlus_gcServer, not concurrent from gcload.runtimeconfig.json, latency Batch from the events", s)
	}
	if rt.HeapLimitBytes == nil || *rt.HeapLimitBytes != 209715200 {
		t.Errorf("heap limit %v, want the file's 200 MiB", rt.HeapLimitBytes)
	}
	fl := findingsAbout(rep, "(pid "+pid+")")["gc_large_object_allocation"]
	if fl == nil {
		t.Fatalf("gc_large_object_allocation did not fire; findings %v", findingsAbout(rep, "(pid "+pid+")"))
	}
	for _, r := range fl.Remedies {
		for _, c := range r.Commands {
			if strings.Contains(c, "gcServer") || strings.Contains(c, "HeapHardLimit") {
				t.Errorf("remedy %q advises %q to a Server GC with a hard limit", r.Title, c)
			}
		}
		if strings.Contains(r.Title, "Server GC is on already") && !strings.Contains(r.Title, "200 MiB") {
			t.Errorf("remedy %q does not name the hard limit in force", r.Title)
		}
	}
	out, err := exec.Command(bin, "check", "--gc-interval", "1s", "--pid", pid).Output()
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if want := "pid/" + pid + ": GC settings: Server GC, not concurrent"; !strings.Contains(string(out), want) {
		t.Errorf("check's text does not say %q:\n%s", want, out)
	}
}

// record holds a session on each .NET process across its samples and
// keeps the normalised series; diagnose over the store judges them: the
// process inducing gen2 collections and allocating on the LOH gets
// gc_induced and gc_large_object_allocation over the window, the idle one
// nothing. The sessions are stopped when the recorder ends.
func TestRuntimeDotNetRecord(t *testing.T) {
	bin := binary(t)
	busy := startDotNet(t, "busy")
	quiet := startDotNet(t, "quiet")
	db := filepath.Join(t.TempDir(), "md.db")
	rec := &recorder{addr: freeAddr(t)}
	// --top large enough for the two test processes on a busy host.
	rec.cmd = exec.Command(bin, "record", "--db", db, "--interval", "1s", "--listen", rec.addr, "--top", "400", "--discover=false")
	rec.cmd.Stderr = os.Stderr
	if err := rec.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.cmd.Process.Kill(); _ = rec.cmd.Wait() })
	start := time.Now()
	for {
		time.Sleep(500 * time.Millisecond)
		_, body := rec.get("/metrics")
		if stored := metricValue(body, "memdoctor_record_scrapes_stored_total"); stored >= 8 && time.Since(start) >= 8*time.Second {
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("the recorder stored too few samples in 2 minutes")
		}
	}
	_ = rec.cmd.Process.Signal(os.Interrupt)
	if err := rec.cmd.Wait(); err != nil {
		t.Fatalf("record: %v", err)
	}
	out, err := exec.Command(bin, "diagnose", "--from", db, "--json").Output()
	if err != nil {
		t.Fatalf("diagnose: %v", err)
	}
	var rep model.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	bpid := strconv.Itoa(busy.Process.Pid)
	rt := runtimeOf(t, &rep, "pid/"+bpid)
	if rt.Source != "eventpipe" || rt.Recent == nil || rt.Recent.Seconds < 5 || rt.Recent.Old < 10 {
		t.Fatalf("the busy process over the recording: source %q, rates %+v", rt.Source, rt.Recent)
	}
	fs := findingsAbout(&rep, "(pid "+bpid+")")
	if f := fs["gc_induced"]; f == nil || !strings.Contains(f.Summary, "GC.Collect() gen2") {
		t.Errorf("gc_induced over the recording: %+v (findings %v)", f, fs)
	}
	if fs["gc_large_object_allocation"] == nil {
		t.Errorf("gc_large_object_allocation did not fire over the recording: %v", fs)
	}
	if rt.GCSettings["gc"] != "server" {
		t.Errorf("GC settings over the recording: %v", rt.GCSettings)
	}
	for id, f := range findingsAbout(&rep, fmt.Sprintf("(pid %d)", quiet.Process.Pid)) {
		t.Errorf("%s fired for the idle .NET process: %s", id, f.Summary)
	}
}

// A .NET process in a memory cgroup of the test's own, limited to 2 GiB:
// the remedy of gc_large_object_allocation names the cgroup and its limit
// (the heap hard limit is a share of it), and check --json joins the
// runtime to its cgroup.
func TestRuntimeDotNetCgroupLimit(t *testing.T) {
	requireLinuxRoot(t)
	binary(t)
	name := fmt.Sprintf("memdoctor-dotnet-%d-%d", os.Getpid(), time.Now().UnixNano())
	dir := testCgroup(t, "", name, 2<<30)
	busy := startDotNet(t, "busy")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(busy.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	rep := checkJSON(t, "--top", "30", "--gc-interval", "3s", "--pid", strconv.Itoa(busy.Process.Pid))
	rt := runtimeOf(t, rep, "pid/"+strconv.Itoa(busy.Process.Pid))
	if rt.Cgroup != "/"+name || rt.CgroupLimitBytes == nil || *rt.CgroupLimitBytes != 2<<30 {
		t.Errorf("runtime joined to cgroup %q, limit %v: want /%s, 2 GiB", rt.Cgroup, rt.CgroupLimitBytes, name)
	}
	fl := findingsAbout(rep, fmt.Sprintf("(pid %d)", busy.Process.Pid))["gc_large_object_allocation"]
	if fl == nil {
		t.Fatalf("gc_large_object_allocation did not fire for the process allocating 200 KB arrays")
	}
	want := "its memory cgroup /" + name + " is limited to 2.00 GiB: set a heap hard limit"
	found := false
	for _, r := range fl.Remedies {
		found = found || strings.Contains(r.Title, want) && strings.Contains(strings.Join(r.Commands, "\n"), "# 75% of 2.00 GiB (hex)")
	}
	if !found {
		t.Errorf("remedies %+v do not name the cgroup's limit (%q)", fl.Remedies, want)
	}
}
