package main

// End-to-end runtime tests: real JVM, CPython and Go services, each in a
// pathological and a healthy variant, read by the real memdoctor binary
// (check --json, through their metrics endpoints and, for the JVM, through
// hsperfdata with no flag at all). The rules must fire on the pathology
// and stay quiet on the healthy twin, and the numbers memdoctor reports
// must lie between what the program itself said just before and just
// after the check.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// freePort returns a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startService runs a test service until the test ends and waits until url
// answers.
func startService(t *testing.T, url string, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return cmd
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer on %s", name, url)
	return nil
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runCheck runs the real binary's check --json.
func runCheck(t *testing.T, args ...string) *model.Report {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"check", "--json", "--top", "3"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("memdoctor check: %v\n%s", err, stderr)
	}
	var r model.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("check --json: %v", err)
	}
	return &r
}

// findingsAbout returns the runtime findings whose subject names the
// target (a URL, or "(pid N)").
func findingsAbout(r *model.Report, what string) map[string]*model.Finding {
	out := map[string]*model.Finding{}
	for i, f := range r.Findings {
		if strings.HasPrefix(f.ID, "gc_") && strings.Contains(f.Subject, what) {
			out[f.ID] = &r.Findings[i]
		}
	}
	return out
}

func runtimeOf(t *testing.T, r *model.Report, target string) *model.Runtime {
	t.Helper()
	for i := range r.Runtimes {
		if r.Runtimes[i].Target == target {
			return &r.Runtimes[i]
		}
	}
	t.Fatalf("no runtime %s in the report: %+v", target, r.Runtimes)
	return nil
}

func between(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %v, want within [%v, %v] (what the program reported before and after)", what, got, lo, hi)
	}
}

// javaStats reads GcWorkload's /stats: collector name → count, millis.
func javaStats(t *testing.T, url string) map[string][2]float64 {
	t.Helper()
	out := map[string][2]float64{}
	sc := bufio.NewScanner(strings.NewReader(get(t, url)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "gc" {
			c, _ := strconv.ParseFloat(f[2], 64)
			ms, _ := strconv.ParseFloat(f[3], 64)
			out[f[1]] = [2]float64{c, ms}
		}
	}
	return out
}

// compileGcWorkload compiles testdata/programs/java/GcWorkload.java and
// returns its class directory.
func compileGcWorkload(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("javac missing: apt-get install openjdk-17-jdk-headless (scripts/install-test-deps.sh)")
	}
	src := filepath.Join(repoRoot(t), "testdata", "programs", "java", "GcWorkload.java")
	return buildOnce(t, "GcWorkload", func(dir string) (string, error) {
		return dir, runBuild(exec.Command("javac", "-d", dir, src))
	})
}

func TestRuntimeJava(t *testing.T) {
	if testing.Short() {
		t.Skip("runs JVMs for ~20 s")
	}
	dir := compileGcWorkload(t)
	pc, ph := freePort(t), freePort(t)
	churnURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", pc)
	healthyURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ph)
	churn := startService(t, churnURL, "java", "-XX:+UseG1GC", "-Xmx160m", "-cp", dir, "GcWorkload", "churn", strconv.Itoa(pc))
	healthy := startService(t, healthyURL, "java", "-XX:+UseG1GC", "-Xmx64m", "-cp", dir, "GcWorkload", "healthy", strconv.Itoa(ph))
	time.Sleep(5 * time.Second)
	statsURL := strings.Replace(churnURL, "/metrics", "/stats", 1)
	before := javaStats(t, statsURL)
	// No flag for hsperfdata: the JVMs are found by themselves.
	rep := runCheck(t, "--gc-interval", "4s", "--scrape", churnURL, "--scrape", healthyURL)
	after := javaStats(t, statsURL)

	churnPID := fmt.Sprintf("(pid %d)", churn.Process.Pid)
	healthyPID := fmt.Sprintf("(pid %d)", healthy.Process.Pid)
	for _, who := range []string{churnPID, churnURL} {
		fs := findingsAbout(rep, who)
		for _, id := range []string{"gc_old_generation_churn", "gc_induced"} {
			if fs[id] == nil {
				t.Errorf("%s did not fire for the churning JVM %s; findings %v", id, who, fs)
			}
		}
	}
	for _, who := range []string{healthyPID, healthyURL} {
		for id, f := range findingsAbout(rep, who) {
			t.Errorf("%s fired for the healthy JVM %s: %s", id, who, f.Summary)
		}
	}

	young := "G1_Young_Generation"
	full := "G1_Old_Generation" // the management bean's name for G1's full collections
	// Read through both its endpoint and its hsperfdata, each JVM is one
	// runtime (the richer source: here the endpoint's), naming the other.
	sc := runtimeOf(t, rep, churnURL)
	if sc.PID != churn.Process.Pid || sc.Also != fmt.Sprintf("pid/%d", churn.Process.Pid) {
		t.Errorf("the scraped JVM is pid %d also %q, want pid %d also pid/%d", sc.PID, sc.Also, churn.Process.Pid, churn.Process.Pid)
	}
	// Without --scrape, the JVMs are read from hsperfdata.
	hsBefore := javaStats(t, statsURL)
	hsRep := runCheck(t, "--gc-interval", "4s")
	hsAfter := javaStats(t, statsURL)
	hs := runtimeOf(t, hsRep, fmt.Sprintf("pid/%d", churn.Process.Pid))
	if hs.Source != "hsperfdata" {
		t.Errorf("JVM read from %q, want hsperfdata", hs.Source)
	}
	between(t, "hsperfdata young collections", *hs.YoungCollections, hsBefore[young][0], hsAfter[young][0])
	// System.gc() runs twice a second: memdoctor's watch samples causes,
	// so it may count fewer, never more than the full collections seen.
	fi := findingsAbout(hsRep, churnPID)["gc_induced"]
	if fi == nil {
		t.Errorf("gc_induced did not fire for the churning JVM read from hsperfdata")
	} else {
		n, _ := evidence(fi, "induced_collections")
		between(t, "hsperfdata induced collections", n, 1, hsAfter[full][0]-hsBefore[full][0])
	}
	between(t, "scraped young collections", *sc.YoungCollections, before[young][0], after[young][0])
	if f := findingsAbout(rep, churnURL)["gc_induced"]; f != nil {
		n, _ := evidence(f, "induced_collections")
		between(t, "scraped System.gc() collections", n, 1, after[full][0]-before[full][0])
		if !strings.Contains(f.Summary, "System.gc()") {
			t.Errorf("gc_induced does not name the cause: %s", f.Summary)
		}
	}
	if f := findingsAbout(rep, churnURL)["gc_old_generation_churn"]; f != nil {
		ratio, _ := evidence(f, "old_to_young_percent")
		promo, _ := evidence(f, "promoted_percent")
		if ratio < 10 && promo < 10 {
			t.Errorf("old/young %v%% and promoted %v%% both below the rule's lines: %s", ratio, promo, f.Summary)
		}
	}
}

type pyStats struct {
	Stats []struct {
		Collections float64 `json:"collections"`
		Collected   float64 `json:"collected"`
	} `json:"stats"`
}

func pythonStats(t *testing.T, url string) pyStats {
	t.Helper()
	var s pyStats
	if err := json.Unmarshal([]byte(get(t, url)), &s); err != nil || len(s.Stats) != 3 {
		t.Fatalf("python /stats: %v", err)
	}
	return s
}

func TestRuntimePython(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python services for ~10 s")
	}
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import prometheus_client").CombinedOutput(); err != nil {
		t.Skipf("python3-prometheus-client missing (scripts/install-test-deps.sh): %s", out)
	}
	src := filepath.Join(repoRoot(t), "testdata", "programs", "python", "gc_service.py")
	pc, ph := freePort(t), freePort(t)
	for ph == pc+1 || pc == ph+1 {
		ph = freePort(t)
	}
	churnURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", pc)
	healthyURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ph)
	startService(t, churnURL, py, src, "churn", strconv.Itoa(pc))
	startService(t, healthyURL, py, src, "healthy", strconv.Itoa(ph))
	time.Sleep(3 * time.Second)
	statsURL := fmt.Sprintf("http://127.0.0.1:%d/", pc+1)
	before := pythonStats(t, statsURL)
	rep := runCheck(t, "--gc-interval", "3s", "--scrape", churnURL, "--scrape", healthyURL)
	after := pythonStats(t, statsURL)

	f := findingsAbout(rep, churnURL)["gc_old_generation_churn"]
	if f == nil {
		t.Fatalf("gc_old_generation_churn did not fire for the churning Python service: %+v", rep.Findings)
	}
	for id, f := range findingsAbout(rep, healthyURL) {
		t.Errorf("%s fired for the healthy Python service: %s", id, f.Summary)
	}
	old, _ := evidence(f, "collected_old_objects")
	between(t, "objects freed by generation 2", old, 1, after.Stats[2].Collected-before.Stats[2].Collected)
	r := runtimeOf(t, rep, churnURL)
	between(t, "generation-2 collections", *r.OldCollections, before.Stats[2].Collections, after.Stats[2].Collections)
	between(t, "generation 0+1 collections", *r.YoungCollections,
		before.Stats[0].Collections+before.Stats[1].Collections, after.Stats[0].Collections+after.Stats[1].Collections)
}

func goStats(t *testing.T, url string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, l := range strings.Split(get(t, url), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			out[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return out
}

// startGoServices builds internal/workloadtest/goservice and starts it
// twice, GC-heavy and healthy, and returns their /metrics URLs.
func startGoServices(t *testing.T) (heavyURL, healthyURL string) {
	t.Helper()
	bin := goservice(t)
	hc, hh := freePort(t), freePort(t)
	heavyURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", hc)
	healthyURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", hh)
	startService(t, heavyURL, bin, "-mode", "gcheavy", "-listen", fmt.Sprintf("127.0.0.1:%d", hc))
	startService(t, healthyURL, bin, "-mode", "healthy", "-listen", fmt.Sprintf("127.0.0.1:%d", hh))
	return heavyURL, healthyURL
}

func TestRuntimeGo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Go services for ~10 s")
	}
	heavyURL, healthyURL := startGoServices(t)
	time.Sleep(3 * time.Second)
	statsURL := strings.Replace(heavyURL, "/metrics", "/stats", 1)
	before := goStats(t, statsURL)
	rep := runCheck(t, "--gc-interval", "3s", "--scrape", heavyURL, "--scrape", healthyURL)
	after := goStats(t, statsURL)

	f := findingsAbout(rep, heavyURL)["gc_time_high"]
	if f == nil {
		t.Fatalf("gc_time_high did not fire for the GC-heavy Go service: %+v", rep.Findings)
	}
	for id, f := range findingsAbout(rep, healthyURL) {
		t.Errorf("%s fired for the healthy Go service: %s", id, f.Summary)
	}
	r := runtimeOf(t, rep, heavyURL)
	// Its GC time is the runtime's GC CPU time over its Ps (the service
	// exports the runtime metrics), read between the program's own
	// before and after.
	gcSecs := func(st map[string]float64) float64 { return st["gc_cpu_seconds"] / st["gomaxprocs"] }
	between(t, "GC CPU seconds per P", *r.GCSeconds, gcSecs(before), gcSecs(after))
	between(t, "GC cycles", *r.FullCollections, before["num_gc"], after["num_gc"])
	// The share memdoctor reports is the program's own GC time over the
	// interval, which lies inside the program's before/after span.
	pct, _ := evidence(f, "gc_time_percent")
	secs, _ := evidence(f, "gc_seconds")
	between(t, "GC seconds in the interval", secs, 0, gcSecs(after)-gcSecs(before))
	if pct <= 5 {
		t.Errorf("gc_time_percent %v fired at or below the 5%% line", pct)
	}
}

// record --scrape keeps the runtime series in the store; diagnose --from
// judges them over the window. On a loaded host a fixed time of recording
// may hold too few samples or GC cycles: the recording lasts until the
// recorder has stored ten samples (each with both services' scrapes) and
// the GC-heavy service has run twenty cycles since it began (10 s at the
// least, 2 min at most).
func TestRuntimeRecordDiagnose(t *testing.T) {
	if testing.Short() {
		t.Skip("records for ~10 s")
	}
	heavyURL, healthyURL := startGoServices(t)
	statsURL := strings.Replace(heavyURL, "/metrics", "/stats", 1)
	db := filepath.Join(t.TempDir(), "md.db")
	rec := &recorder{addr: freeAddr(t)}
	rec.cmd = exec.Command(binary(t), "record", "--db", db, "--interval", "1s", "--listen", rec.addr, "--top", "3",
		"--scrape", heavyURL, "--scrape", healthyURL)
	rec.cmd.Stderr = os.Stderr
	if err := rec.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.cmd.Process.Kill(); _ = rec.cmd.Wait() })
	s0 := goStats(t, statsURL)
	gc0 := s0["num_gc"]
	start := time.Now()
	var stored, cycles float64
	var s1 map[string]float64
	for {
		time.Sleep(500 * time.Millisecond)
		_, body := rec.get("/metrics")
		stored = metricValue(body, "memdoctor_record_scrapes_stored_total")
		s1 = goStats(t, statsURL)
		cycles = s1["num_gc"] - gc0
		if stored >= 10 && cycles >= 20 && time.Since(start) >= 10*time.Second {
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("after %v the recorder stored %v samples and the GC-heavy service ran %v GC cycles; want 10 and 20", time.Since(start).Round(time.Second), stored, cycles)
		}
	}
	// The service's own share of time in GC over the recording, as the
	// rule reads a Go program's (the collector's CPU over GOMAXPROCS): on
	// a host loaded by other work the service is descheduled, collects
	// less and may stay under the rule's 5 %; then it did not have the
	// pathology, and the rule is right not to name it.
	share := (s1["gc_cpu_seconds"] - s0["gc_cpu_seconds"]) / s1["gomaxprocs"] / (s1["now"] - s0["now"])
	t.Logf("recorded %v: %v samples stored, %v GC cycles of the GC-heavy service, %.1f%% of its time in GC", time.Since(start).Round(time.Second), stored, cycles, 100*share)
	_ = rec.cmd.Process.Signal(os.Interrupt)
	if err := rec.cmd.Wait(); err != nil {
		t.Fatalf("record: %v", err)
	}
	out, err := exec.Command(binary(t), "diagnose", "--from", db, "--json").Output()
	if err != nil {
		t.Fatalf("diagnose: %v", err)
	}
	var rep model.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	f := findingsAbout(&rep, heavyURL)["gc_time_high"]
	switch {
	case f == nil && share < 2*model.GCTimeWarn:
		t.Skipf("the GC-heavy service spent only %.1f%% of the recording in GC (under twice the rule's %.0f%%, on a host loaded by other work): no pathology to name", 100*share, 100*model.GCTimeWarn)
	case f == nil:
		rts, _ := json.Marshal(rep.Runtimes)
		t.Fatalf("gc_time_high did not fire on the recording, with the service %.1f%% of its time in GC: findings %+v; not evaluated %+v; runtimes %s; the GC series:\n%s",
			100*share, rep.Findings, rep.Coverage.NotEvaluated, rts, strings.Join(gcSeries(t, db, heavyURL), "\n"))
	}
	for id, f := range findingsAbout(&rep, healthyURL) {
		t.Errorf("%s fired for the healthy Go service: %s", id, f.Summary)
	}
	r := runtimeOf(t, &rep, heavyURL)
	if r.Recent == nil || r.Recent.Seconds < 5 || r.Recent.PartsAboveGCThreshold == nil {
		t.Errorf("rates not taken over the window: %+v", r.Recent)
	}
	// The service's GC series is one series, with its pid: the recorder
	// matches the target to its process whether or not the process is
	// among the top 3 (when its pid label came and went with the top N,
	// the series was cut in pieces and the window judged one of them).
	sets := map[string]int{}
	for _, l := range gcSeries(t, db, heavyURL) {
		labels, _, _ := strings.Cut(l, "}")
		sets[labels]++
	}
	if len(sets) != 1 {
		t.Errorf("the GC-heavy service's GC seconds were stored under %d label sets, want 1: %v", len(sets), sets)
	}
	for ls := range sets {
		if !strings.Contains(ls, `pid="`) {
			t.Errorf("the GC-heavy service's GC seconds were stored without its pid: %s", ls)
		}
	}
}

// gcSeries is the lines of memdoctor_runtime_gc_seconds_total of a target
// in the export of a recording.
func gcSeries(t *testing.T, db, target string) []string {
	t.Helper()
	om, err := exec.Command(binary(t), "export", "--from", db, "-o", "-").Output()
	if err != nil {
		t.Fatalf("export --from %s: %v", db, err)
	}
	var out []string
	for _, l := range strings.Split(string(om), "\n") {
		if strings.HasPrefix(l, "memdoctor_runtime_gc_seconds_total{") && strings.Contains(l, `target="`+target+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// javaHeap reads GcWorkload's /heap: committed, used, used_after_gc,
// total_memory (bytes) and phase.
func javaHeap(t *testing.T, url string) (map[string]float64, string) {
	t.Helper()
	out, phase := map[string]float64{}, ""
	for _, l := range strings.Split(get(t, url), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) != 2:
		case f[0] == "phase":
			phase = f[1]
		default:
			out[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return out, phase
}

// waitHeap polls /heap until ok holds or a minute has passed.
func waitHeap(t *testing.T, url string, what string, ok func(map[string]float64, string) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		h, phase := javaHeap(t, url)
		if ok(h, phase) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v (phase %s) after a minute", what, h, phase)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// gc_heap_slack on a real JVM: a burst of 320 MiB of buffers grows G1's
// heap; once the buffers are dropped and a young collection has freed them
// the live heap is a few MiB, but with G1's defaults nothing gives the
// committed heap back while the process only works lightly. The same
// program with the remedy's flags (a periodic concurrent cycle, a lower
// MaxHeapFreeRatio) shrinks its heap and the rule stays quiet. Both are
// read through hsperfdata (no flag) and through their /metrics.
func TestRuntimeJavaHeapSlack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two JVMs of up to 1 GiB for ~15 s")
	}
	dir := compileGcWorkload(t)
	ps, pf := freePort(t), freePort(t)
	slackURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ps)
	fixedURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", pf)
	heap := []string{"-XX:+UseG1GC", "-Xms16m", "-Xmx1g"}
	slack := startService(t, slackURL, "java", append(heap, "-cp", dir, "GcWorkload", "burst", strconv.Itoa(ps))...)
	fixed := startService(t, fixedURL, "java", append(heap, "-XX:G1PeriodicGCInterval=1000",
		"-XX:MaxHeapFreeRatio=30", "-XX:MinHeapFreeRatio=10", "-cp", dir, "GcWorkload", "burst", strconv.Itoa(pf))...)
	slackHeap := strings.Replace(slackURL, "/metrics", "/heap", 1)
	fixedHeap := strings.Replace(fixedURL, "/metrics", "/heap", 1)
	waitHeap(t, slackHeap, "burst JVM after its burst", func(_ map[string]float64, p string) bool { return p == "idle" })
	waitHeap(t, fixedHeap, "JVM with periodic collections shrinking its heap", func(h map[string]float64, p string) bool {
		return p == "idle" && h["committed"] < 64<<20
	})
	before, _ := javaHeap(t, slackHeap)
	fixedBefore, _ := javaHeap(t, fixedHeap)
	rep := runCheck(t, "--gc-interval", "3s", "--scrape", slackURL, "--scrape", fixedURL)
	// Read through its endpoint, each JVM is one runtime (the endpoint's
	// reading is the richer); without --scrape the same JVMs are read from
	// hsperfdata.
	hsRep := runCheck(t, "--gc-interval", "3s")
	after, _ := javaHeap(t, slackHeap)
	fixedAfter, _ := javaHeap(t, fixedHeap)
	t.Logf("burst JVM says: committed %.0f→%.0f, used %.0f→%.0f, used after its last collection %.0f",
		before["committed"], after["committed"], before["used"], after["used"], after["used_after_gc"])
	t.Logf("fixed JVM says: committed %.0f→%.0f, used %.0f→%.0f",
		fixedBefore["committed"], fixedAfter["committed"], fixedBefore["used"], fixedAfter["used"])

	// The burst was freed: what the program holds is free heap, not live data.
	if before["committed"] < 256<<20 || before["used_after_gc"] > 64<<20 {
		t.Fatalf("the burst did not leave a large, empty heap: %v", before)
	}
	slackPID := fmt.Sprintf("(pid %d)", slack.Process.Pid)
	fixedPID := fmt.Sprintf("(pid %d)", fixed.Process.Pid)
	reports := map[string]*model.Report{slackPID: hsRep, slackURL: rep, fixedPID: hsRep, fixedURL: rep,
		fmt.Sprintf("pid/%d", fixed.Process.Pid): hsRep}
	for _, who := range []string{slackPID, slackURL} {
		f := findingsAbout(reports[who], who)["gc_heap_slack"]
		if f == nil {
			t.Errorf("gc_heap_slack did not fire for the JVM holding its burst heap %s; findings %v", who, findingsAbout(rep, who))
			continue
		}
		t.Logf("%s: %s", who, f.Summary)
		committed, _ := evidence(f, "heap_committed_bytes")
		live, _ := evidence(f, "heap_live_bytes")
		sl, _ := evidence(f, "slack_bytes")
		majors, ok := evidence(f, "major_collections_per_minute")
		// hsperfdata sums the generations' capacities, which can differ
		// from the management bean's committed heap by a few bytes.
		between(t, who+" committed heap", committed,
			min(before["committed"], after["committed"])-1<<20, max(before["committed"], after["committed"])+1<<20)
		// Live is the heap in use: at least what survived the last
		// collection, at most what the program had in use at the end.
		between(t, who+" live heap", live, before["used_after_gc"], max(before["used"], after["used"]))
		between(t, who+" slack", sl, 64<<20, after["committed"]-after["used_after_gc"]+1<<20)
		if !ok || majors >= 1 {
			t.Errorf("%s major collections a minute = %v (published %v), want below one", who, majors, ok)
		}
		var cmds strings.Builder
		for _, r := range f.Remedies {
			cmds.WriteString(strings.Join(r.Commands, "\n"))
		}
		for _, flag := range []string{"G1PeriodicGCInterval", "MaxHeapFreeRatio"} {
			if !strings.Contains(cmds.String(), flag) {
				t.Errorf("%s remedies do not name -XX:%s: %s", who, flag, cmds.String())
			}
		}
	}

	for _, who := range []string{fixedPID, fixedURL} {
		if f := findingsAbout(reports[who], who)["gc_heap_slack"]; f != nil {
			t.Errorf("gc_heap_slack fired for the JVM that gave its heap back %s: %s", who, f.Summary)
		}
	}
	// Quiet because the heap was given back, not because collections are
	// frequent: the committed heap memdoctor read is the program's own,
	// and its slack is below the rule's line.
	for _, target := range []string{fmt.Sprintf("pid/%d", fixed.Process.Pid), fixedURL} {
		r := runtimeOf(t, reports[target], target)
		if r.HeapCommittedBytes == nil || r.HeapLiveBytes == nil {
			t.Errorf("%s: no committed or live heap read: %+v", target, r)
			continue
		}
		between(t, target+" committed heap", *r.HeapCommittedBytes,
			min(fixedBefore["committed"], fixedAfter["committed"])-1<<20, max(fixedBefore["committed"], fixedAfter["committed"])+1<<20)
		if s := *r.HeapCommittedBytes - *r.HeapLiveBytes; s >= 64<<20 {
			t.Errorf("%s: slack %v bytes after the periodic collections", target, s)
		}
	}
}
