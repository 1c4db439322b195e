package main

// The recorder, run for real as a separate process: what it serves, what it
// survives (kill -9, a full disk, SIGHUP), and recordings of a healthy host
// and of one leaking dying cgroups at a steady rate, diagnosed afterwards.

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
)

type recorder struct {
	cmd  *exec.Cmd
	addr string
	log  *os.File
}

// startRecorder runs `memdoctor record` on db with the given interval.
func startRecorder(t *testing.T, db string, interval time.Duration, extra ...string) *recorder {
	t.Helper()
	bin := binary(t)
	addr := freeAddr(t)
	logf, err := os.CreateTemp(t.TempDir(), "record-*.log")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"record", "--db", db, "--interval", interval.String(), "--listen", addr, "--top", "10"}, extra...)
	if interval < time.Second {
		args = append(args, "--force-interval") // tests record fast to be quick
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &recorder{cmd: cmd, addr: addr, log: logf}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	r.waitCollected(t, time.Minute)
	return r
}

// waitCollected waits for the recorder's first collection. Not for its
// health: on a loaded host one collection may outlast the three intervals
// /healthz allows (seen at 500 ms), which is the host's state, not the
// recorder's fault.
func (r *recorder) waitCollected(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if code, body := r.get("/metrics"); code == 200 && metricValue(body, "memdoctor_record_collections_total") >= 1 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, body := r.get("/healthz")
	t.Fatalf("recorder made no collection within %v: %s\nlog:\n%s", within, body, r.logText())
}

func freeAddr(t *testing.T) string {
	t.Helper()
	// Port 0 then reuse: the recorder binds right after.
	l, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	_ = l.Close()
	return a
}

func (r *recorder) get(path string) (int, string) {
	resp, err := http.Get("http://" + r.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (r *recorder) waitHealthy(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if code, _ := r.get("/healthz"); code == 200 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, body := r.get("/healthz")
	t.Fatalf("recorder not healthy within %v: %s\nlog:\n%s", within, body, r.logText())
}

func (r *recorder) logText() string {
	b, _ := os.ReadFile(r.log.Name())
	return string(b)
}

// stop sends SIGTERM and waits for a clean exit.
func (r *recorder) stop(t *testing.T) {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("recorder exited with %v after SIGTERM\n%s", err, r.logText())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("recorder did not exit within 10 s of SIGTERM")
	}
}

func storedTimes(t *testing.T, db string) []int64 {
	t.Helper()
	st, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ss, err := st.Select(store.Query{Names: []string{"node_memory_MemTotal_bytes"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("%d MemTotal series", len(ss))
	}
	var ts []int64
	for _, p := range ss[0].Points {
		ts = append(ts, p.T)
	}
	return ts
}

func TestRecorderServesAndStops(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	db := filepath.Join(t.TempDir(), "md.db")
	r := startRecorder(t, db, 300*time.Millisecond)
	time.Sleep(time.Second)
	code, body := r.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{"# TYPE node_memory_MemAvailable_bytes gauge", "node_zoneinfo_low_pages{", "memdoctor_process_pss_bytes{",
		"process_cpu_seconds_total ", "process_resident_memory_bytes ", `memdoctor_collector_success{collector="meminfo"} 1`,
		"memdoctor_collector_duration_seconds{"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		out, _ := cmd.CombinedOutput()
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" && !strings.HasPrefix(l, "node_memory_") && !strings.HasPrefix(l, "node_vmstat_") && !strings.HasPrefix(l, "node_sysctl_vm_") {
				t.Errorf("promtool check metrics: %s", l)
			}
		}
	}
	// SIGHUP reopens the store; recording goes on.
	_ = r.cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(700 * time.Millisecond)
	if !strings.Contains(r.logText(), "reopened") {
		t.Errorf("no reopen after SIGHUP:\n%s", r.logText())
	}
	r.waitHealthy(t, 5*time.Second)
	r.stop(t)
	ts := storedTimes(t, db)
	if len(ts) < 4 {
		t.Errorf("%d samples stored in ~2 s at 300 ms", len(ts))
	}
}

// TestRecorderKill9 kills the recorder mid-write: the store opens, passes
// its integrity check, lost at most the last interval, and a new recorder
// continues in the same file.
func TestRecorderKill9(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	db := filepath.Join(t.TempDir(), "md.db")
	for round := 0; round < 3; round++ {
		r := startRecorder(t, db, 100*time.Millisecond)
		time.Sleep(time.Duration(700+round*310) * time.Millisecond)
		_, body := r.get("/metrics")
		served := metricValue(body, "memdoctor_record_scrapes_stored_total")
		_ = r.cmd.Process.Kill() // SIGKILL, wherever it is
		_, _ = r.cmd.Process.Wait()
		ts := storedTimes(t, db)
		if float64(len(ts)) < served {
			t.Errorf("round %d: %d samples in the store, the recorder had reported %v stored before kill -9", round, len(ts), served)
		}
		for i := 1; i < len(ts); i++ {
			if ts[i] <= ts[i-1] {
				t.Fatalf("round %d: timestamps out of order at %d", round, i)
			}
		}
	}
	if out, err := exec.Command("sqlite3", db, "PRAGMA integrity_check;").CombinedOutput(); err == nil && strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("integrity_check after kill -9: %s", out)
	}
}

func metricValue(body, name string) float64 {
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return -1
}

// TestRecorderFullDisk puts the store on a 3 MiB tmpfs, fills it, and
// checks that the recorder reports it, keeps sampling, and stores what it
// held once space returns.
func TestRecorderFullDisk(t *testing.T) {
	requireLinuxRoot(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	db := filepath.Join(dir, "md.db")
	r := startRecorder(t, db, 200*time.Millisecond)
	filler := filepath.Join(dir, "filler")
	// Fill what is left (dd stops with ENOSPC).
	_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").Run()
	deadline := time.Now().Add(30 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		var code int
		code, body = r.get("/healthz")
		if code == 503 && strings.Contains(body, "storing fails") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(body, "storing fails") {
		t.Fatalf("a full disk was not reported: %s\n%s", body, r.logText())
	}
	time.Sleep(time.Second) // samples taken while full stay in memory
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r.waitHealthy(t, 10*time.Second)
	r.stop(t)
	if !strings.Contains(r.logText(), "disk full") || !strings.Contains(r.logText(), "storing works again") {
		t.Errorf("log does not tell the story:\n%s", r.logText())
	}
	ts := storedTimes(t, db)
	for i := 1; i < len(ts); i++ {
		if gap := ts[i] - ts[i-1]; gap > 1000 {
			t.Errorf("a gap of %d ms in the samples: the full-disk interval was lost", gap)
		}
	}
}

// compress copies a recording into a new store with time stretched by
// factor (1 s of recording = factor seconds), so a minute-long recording
// made by a test stands for hours of a host's life.
func compress(t *testing.T, src, dst string, factor int64) {
	t.Helper()
	in, err := store.Open(src, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ss, err := in.Select(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	insts, _ := in.Instances()
	byT := map[int64]*sample.Snapshot{}
	var times []int64
	var t0 int64 = -1
	for _, s := range ss {
		for _, p := range s.Points {
			if t0 < 0 || p.T < t0 {
				t0 = p.T
			}
		}
	}
	for _, s := range ss {
		for _, p := range s.Points {
			nt := t0 + (p.T-t0)*factor
			sc, ok := byT[nt]
			if !ok {
				sc = &sample.Snapshot{Time: time.UnixMilli(nt)}
				byT[nt] = sc
				times = append(times, nt)
			}
			v := p.V
			if s.Name == "node_boot_time_seconds" {
				// One boot, long before the recording: the host had been up
				// for hours, which the stretch makes months.
				v = float64(t0/1000 - 90*86400)
			}
			sc.AddMetric(sample.Metric{Name: s.Name, Labels: s.Labels, Value: v})
		}
	}
	sortInt64(times)
	out, err := store.Open(dst, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var snapshots []*sample.Snapshot
	for _, tm := range times {
		snapshots = append(snapshots, byT[tm])
	}
	if err := out.Append(insts[0], snapshots...); err != nil {
		t.Fatal(err)
	}
}

func sortInt64(a []int64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func diagnoseJSON(t *testing.T, from string) *model.Report {
	t.Helper()
	out, errOut, code := runCLI(t, "diagnose", "--from", from, "--json")
	if code != 0 {
		t.Fatalf("diagnose: exit %d: %s", code, errOut)
	}
	var r model.Report
	if err := jsonUnmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// hostState is what a test reads of the whole host before and after it
// records, to tell what the host did on its own from what the test did.
type hostState struct {
	at               time.Time
	cgroups          int64   // memory cgroups, live and dying (/proc/cgroups)
	available, total float64 // MemAvailable, MemTotal (bytes)
	unreclaimable    float64 // SUnreclaim (bytes)
	oomKills         int64   // oom_kill (/proc/vmstat): another test's OOM kill is the host's
}

func readHostState(t *testing.T) hostState {
	t.Helper()
	h := hostState{at: time.Now(), cgroups: memoryCgroups(t)}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "MemAvailable:":
			h.available = v * 1024
		case "MemTotal:":
			h.total = v * 1024
		case "SUnreclaim:":
			h.unreclaimable = v * 1024
		}
	}
	if b, err := os.ReadFile("/proc/vmstat"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
				h.oomKills, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return h
}

// busy says what the host did on its own between a and b, by what a rule
// judging the whole host would see of it: "cgroups" (memory cgroups made
// or freed), "available" (available memory lost), "slab" (unreclaimable
// slab grown), "oom" (a process OOM-killed, another test's, say). A kind
// missing is one the host stayed quiet in.
func (a hostState) busy(b hostState) map[string]string {
	did := map[string]string{}
	if d := b.cgroups - a.cgroups; d >= 20 || d <= -20 {
		did["cgroups"] = fmt.Sprintf("memory cgroups %d -> %d", a.cgroups, b.cgroups)
	}
	if d := a.available - b.available; d >= 0.01*a.total {
		did["available"] = fmt.Sprintf("MemAvailable fell %.0f MiB", d/(1<<20))
	}
	if d := b.unreclaimable - a.unreclaimable; d >= 0.05*a.unreclaimable {
		did["slab"] = fmt.Sprintf("SUnreclaim grew %.0f MiB", d/(1<<20))
	}
	if b.oomKills > a.oomKills {
		did["oom"] = fmt.Sprintf("%d OOM kills", b.oomKills-a.oomKills)
	}
	return did
}

// hostRuleKinds: the host-wide rules a busy host may rightly fire while the
// test records it, and what of the host each judges (as hostState.busy
// names it).
var hostRuleKinds = map[string]string{
	"dying_cgroups":             "cgroups",
	"available_memory_decline":  "available",
	"low_available_memory":      "available",
	"slab_unreclaimable_growth": "slab",
	"slab_unreclaimable_high":   "slab",
	"kernel_memory_unexplained": "slab",
	"oom_kills":                 "oom",
	"cgroup_oom_kills":          "oom",
}

// TestRecordingsDiagnosed records a healthy host, then the same host while
// memory cgroups are created, charged with page cache and removed at a
// steady rate, and diagnoses both, time-compressed ×900 (0.5 s = 7.5 min).
// The host is not the test's: other processes may make and remove cgroups
// or use memory meanwhile. The growth the leaking recording reports is
// judged against what the test made plus what the host's count did on its
// own (read before and after), and a finding on the healthy recording is
// a failure only where the host, read the same way, gave it no cause.
func TestRecordingsDiagnosed(t *testing.T) {
	skipShort(t)
	requireLinuxRoot(t)
	root, _ := memoryHierarchy(t)
	const factor = 900
	dir := t.TempDir()
	// A host that already has many dying cgroups is not a healthy one:
	// the quiet case is then not checked (as in TestDyingCgroupsIntegration).
	startDying := dyingOf(t)

	healthy := filepath.Join(dir, "healthy.db")
	h0 := readHostState(t)
	r := startRecorder(t, healthy, 500*time.Millisecond)
	time.Sleep(40 * time.Second)
	r.stop(t)
	h1 := readHostState(t)
	hostBusy := h0.busy(h1)
	if startDying >= 100 {
		hostBusy["cgroups"] = strings.TrimPrefix(hostBusy["cgroups"]+fmt.Sprintf(", %d dying memory cgroups at the start", startDying), ", ")
	}
	if len(hostBusy) > 0 {
		t.Logf("while the healthy host was recorded the host on its own: %v", hostBusy)
	}

	leaking := filepath.Join(dir, "leaking.db")
	l0 := readHostState(t)
	r = startRecorder(t, leaking, 500*time.Millisecond)
	data := filepath.Join(dir, "files")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("memdoctor_rec_%d_", os.Getpid())
	var made []string
	t.Cleanup(func() {
		for _, d := range made {
			_ = os.Remove(d)
		}
	})
	start := time.Now()
	for i := 0; time.Since(start) < 40*time.Second; i++ {
		d := filepath.Join(root, prefix+strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		made = append(made, d)
		script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec dd if=/dev/zero of=%s/f%d bs=64k count=2 status=none", d, data, i)
		if out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("writer: %v %s", err, out)
		}
		for try := 0; try < 50 && os.Remove(d) != nil; try++ {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // a steady ~4 per second
	}
	r.stop(t)
	l1 := readHostState(t) // the test's cgroups are still pinned by its files
	_ = os.RemoveAll(data)
	// Per compressed day: ours, and the count's whole growth (ours and the
	// host's own) over the recording.
	perDay := func(n int64) float64 { return float64(n) * 86400 / (l1.at.Sub(l0.at).Seconds() * factor) }
	ours, total := int64(len(made)), l1.cgroups-l0.cgroups
	t.Logf("leaking: the test made %d memory cgroups (%.0f a compressed day); the host's count went %d -> %d (%+d on its own)",
		ours, perDay(ours), l0.cgroups, l1.cgroups, total-ours)

	for _, c := range []struct {
		db   string
		fire bool
	}{{healthy, false}, {leaking, true}} {
		z := strings.TrimSuffix(c.db, ".db") + "-x900.db"
		compress(t, c.db, z, factor)
		rep := diagnoseJSON(t, z)
		f := finding(rep, "dying_cgroups")
		// On a host that already has dying cgroups the rule also reports
		// their count; the growth is the finding this recording is about.
		for i := range rep.Findings {
			if g := &rep.Findings[i]; g.ID == "dying_cgroups" {
				if _, ok := evidence(g, "memory_cgroups_per_day"); ok {
					f = g
				}
			}
		}
		if c.fire {
			growth, ok := 0.0, false
			if f != nil {
				growth, ok = evidence(f, "memory_cgroups_per_day")
				t.Logf("leaking: %s", f.Summary)
			}
			switch {
			case total < ours/2:
				// The host freed its own dying cgroups as fast as the test
				// made them: the count does not show what the test did.
				t.Logf("leaking: the host's own churn hides the test's growth (%+d in all, %d made); not judged", total, ours)
			case !ok:
				t.Errorf("leaking: no memory_cgroups_per_day growth, after the test made %d memory cgroups (%.0f a day) and the host's count grew %d; findings %+v notes %+v",
					ours, perDay(ours), total, rep.Findings, rep.Notes)
			case growth < perDay(total)/2 || growth > 2*perDay(total) || growth < perDay(ours)/2:
				// The rule fits the whole series, so its slope may differ
				// from the end-to-end growth, but not by a factor of two.
				t.Errorf("memory_cgroups_per_day = %v, want about %.0f (the count's growth, compressed: the test's %.0f and the host's own %+.0f)",
					growth, perDay(total), perDay(ours), perDay(total-ours))
			}
			continue
		}
		for _, f := range rep.Findings {
			switch {
			case f.Severity == "info":
			case strings.Contains(f.Subject, "(pid "):
				// A process this test did not start (a compiler, another
				// test's program) grew while the host was recorded:
				// compressed ×900, any growth is fast. Not the host's
				// health, and not this test's to judge.
				t.Logf("healthy recording: %s on %s, a process of this host (not checked): %s", f.ID, f.Subject, f.Summary)
			case hostBusy[hostRuleKinds[f.ID]] != "":
				t.Logf("healthy recording, a host that did so on its own (%s; not checked): %s (%s): %s", hostBusy[hostRuleKinds[f.ID]], f.ID, f.Severity, f.Summary)
			default:
				t.Errorf("healthy recording: %s fired (%s) while the host stayed quiet in what it judges (memory cgroups %d -> %d, MemAvailable %.0f -> %.0f MiB, SUnreclaim %.0f -> %.0f MiB): %s",
					f.ID, f.Severity, h0.cgroups, h1.cgroups, h0.available/(1<<20), h1.available/(1<<20), h0.unreclaimable/(1<<20), h1.unreclaimable/(1<<20), f.Summary)
			}
		}
	}
}

// TestTwoRecordersOneStore: a second recorder on the same store refuses at
// once, naming the first (its pid and command), and the first records on
// undisturbed: every interval stored, nothing dropped, a clean exit.
func TestTwoRecordersOneStore(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	db := filepath.Join(t.TempDir(), "md.db")
	first := startRecorder(t, db, 200*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	second := exec.Command(binary(t), "record", "--db", db, "--interval", "200ms", "--force-interval", "--listen", freeAddr(t))
	start := time.Now()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = second.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = second.Process.Kill()
		<-done
		t.Fatalf("the second recorder still runs after 10 s:\n%s", out)
	}
	if err == nil {
		t.Fatalf("the second recorder exited 0:\n%s", out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the second recorder took %v to refuse", d)
	}
	msg := string(out)
	for _, want := range []string{"pid " + strconv.Itoa(first.cmd.Process.Pid), "memdoctor record", db + ".lock", "--db"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "clock went back") {
		t.Errorf("the second recorder reached the store:\n%s", msg)
	}
	time.Sleep(600 * time.Millisecond)
	first.waitHealthy(t, 2*time.Second)
	_, body := first.get("/metrics")
	if v := metricValue(body, "memdoctor_record_dropped_total"); v != 0 {
		t.Errorf("the first recorder dropped %v samples", v)
	}
	first.stop(t)
	log := first.logText()
	for _, bad := range []string{"clock went back", "not stored", "storing failed"} {
		if strings.Contains(log, bad) {
			t.Errorf("the first recorder was disturbed (%q):\n%s", bad, log)
		}
	}
	ts := storedTimes(t, db)
	for i := 1; i < len(ts); i++ {
		if ts[i] <= ts[i-1] {
			t.Fatalf("timestamps out of order at %d", i)
		}
	}
	if len(ts) < 5 {
		t.Errorf("%d samples stored by the first recorder in ~1.1 s at 200 ms", len(ts))
	}
	// The lock went with the first: a new recorder takes over the store.
	third := startRecorder(t, db, 200*time.Millisecond)
	third.stop(t)
}

// Duration flags (--retention, --range, --step, --since -D) read Go and
// Prometheus durations through one parser: "1.5d" was read as one day and
// "3xd" as three (the digits before the d were scanned, the rest ignored),
// and "1d12h" was refused.
func TestParseRetention(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "720h": 720 * time.Hour, "1d12h": 36 * time.Hour, "0": 0} {
		if got, err := parseRetention(in); err != nil || got != want {
			t.Errorf("parseRetention(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1.5d", "3xd", "-7d", "", "week"} {
		if got, err := parseRetention(in); err == nil {
			t.Errorf("parseRetention(%q) = %v, want an error", in, got)
		}
	}
}
