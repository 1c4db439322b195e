package main

// rightsize on recordings of known workloads, each in a memory cgroup of
// the test's own on this host: a JVM with a fixed heap, a Go service with
// GOMEMLIMIT, a page-cache-heavy file reader and a leaking process. Each
// recommendation is checked against what the workload is, then replayed:
// the workload runs again in a cgroup limited to the recommended limit and
// is not OOM-killed (memory.oom_control's oom_kill, memory.events'
// oom_kill on v2), while the JVM with its heap touched is killed under
// the common rule's limit.

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

	"github.com/memdoctor/memdoctor/internal/fleettest"
)

// rsItem is what the test reads of a recommendation (rightsize --json).
type rsItem struct {
	Name          string                    `json:"name"`
	Cgroup        string                    `json:"cgroup"`
	Refused       string                    `json:"refused"`
	Leak          *struct{ Summary string } `json:"leak"`
	RequestBytes  int64                     `json:"request_bytes"`
	LimitBytes    int64                     `json:"limit_bytes"`
	UnreclP99     int64                     `json:"unreclaimable_p99_bytes"`
	UnreclMax     int64                     `json:"unreclaimable_max_bytes"`
	WorkingSetMax int64                     `json:"working_set_max_bytes"`
	CacheMax      int64                     `json:"page_cache_max_bytes"`
	CacheNeed     int64                     `json:"page_cache_need_bytes"`
	CacheWhy      string                    `json:"page_cache_need"`
	RuntimeNeed   int64                     `json:"runtime_need_bytes"`
	Settings      []struct {
		Runtime, Name, Value, Was, Why string
	} `json:"settings"`
	Common struct {
		LimitBytes int64  `json:"limit_bytes"`
		Verdict    string `json:"verdict"`
		Why        string `json:"why"`
	} `json:"common_rule"`
}

// testCgroup makes a memory cgroup below parent (the hierarchy's root
// when ""), limited to limit bytes when limit > 0, removed at the end
// once its processes are gone.
func testCgroup(t *testing.T, parent, name string, limit int64) string {
	t.Helper()
	root, v2 := memoryHierarchy(t)
	if parent == "" {
		parent = root
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for try := 0; try < 200; try++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
		t.Errorf("cgroup %s not removed", dir)
	})
	if limit > 0 {
		l := []byte(strconv.FormatInt(limit, 10))
		if v2 {
			if err := os.WriteFile(filepath.Join(dir, "memory.max"), l, 0); err != nil {
				t.Fatal(err)
			}
			_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
		} else {
			if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), l, 0); err != nil {
				t.Fatal(err)
			}
			_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), l, 0)
		}
	}
	return dir
}

// oomKillsIn reads a cgroup's OOM kill count (v1 memory.oom_control, v2
// memory.events).
func oomKillsIn(t *testing.T, dir string) int {
	t.Helper()
	for _, f := range []string{"memory.oom_control", "memory.events"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
	}
	t.Fatalf("%s: no oom_kill count (memory.oom_control or memory.events)", dir)
	return 0
}

// cgroupStat reads one key of a cgroup's memory.stat (v1's total_ key).
func cgroupStat(dir, key string) int64 {
	b, _ := os.ReadFile(filepath.Join(dir, "memory.stat"))
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && (f[0] == "total_"+key || f[0] == key) {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// startInCgroup runs argv with env in the cgroup dir until the test ends;
// ready (when not "") is a line its stdout prints once it is set up.
func startInCgroup(t *testing.T, dir string, env []string, ready string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	if ready == "" {
		return cmd
	}
	deadline := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%v exited before saying %q", argv, ready)
			}
			if l == ready {
				return cmd
			}
		case <-deadline:
			t.Fatalf("%v did not say %q within 90 s", argv, ready)
		}
	}
}

// alive says whether cmd's process still runs (not reaped, not a zombie
// killed by a signal).
func alive(cmd *exec.Cmd) bool {
	return syscall.Kill(cmd.Process.Pid, 0) == nil && !strings.Contains(procState(cmd.Process.Pid), "Z")
}

func procState(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

// The workloads, each as it is recorded and as it is replayed.
const (
	rsHeap      = 256 << 20 // the JVM's -Xms = -Xmx
	rsFileBytes = 192 << 20 // the reader's file
)

func rsJVM(dir string, preTouch bool) []string {
	a := []string{"java", "-Xms256m", "-Xmx256m"}
	if preTouch {
		a = append(a, "-XX:+AlwaysPreTouch")
	}
	return append(a, "-cp", dir, "HeapHold", "32", "1", "600")
}

// rsReader writes its file from inside its cgroup (so its page cache is
// charged there) and reads it again and again.
func rsReader(file string) []string {
	return []string{"/bin/sh", "-c", fmt.Sprintf(`head -c %d /dev/urandom > "$0" && sync && echo written && while :; do cat "$0" > /dev/null; sleep 0.2; done`, rsFileBytes), file}
}

// rsLeak keeps 4 MiB more every quarter of a second (touched), up to 1 GiB.
var rsLeak = []string{"python3", "-c", `import time, sys
keep = []
print("leaking", flush=True)
for i in range(256):
    keep.append(b"x" * (4 << 20))
    time.sleep(0.25)
time.sleep(600)`}

func TestRightsizeRecordedWorkloads(t *testing.T) {
	requireLinuxRoot(t)
	if testing.Short() {
		t.Skip("records four workloads for 20 s and replays three")
	}
	for _, p := range []string{"java", "javac", "python3"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s missing (scripts/install-test-deps.sh)", p)
		}
	}
	bin := binary(t)
	classes := t.TempDir()
	src := filepath.Join(repoRoot(t), "testdata", "programs", "java", "HeapHold.java")
	if out, err := exec.Command("javac", "-d", classes, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	gosvc := goservice(t)
	// The reader's file lives on a disk (t.TempDir may be a tmpfs, whose
	// pages are shmem, not page cache).
	fileDir, err := os.MkdirTemp(repoRoot(t), ".rightsize-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(fileDir) })

	name := fmt.Sprintf("memdoctor_rightsize_%d", os.Getpid())
	parent := testCgroup(t, "", name, 0)
	cg := map[string]string{}
	for _, w := range []string{"jvm", "go", "reader", "leak"} {
		cg[w] = testCgroup(t, parent, w, 0)
	}
	startInCgroup(t, cg["jvm"], nil, "ready", rsJVM(classes, false)...)
	startInCgroup(t, cg["go"], []string{"GOMEMLIMIT=300MiB"}, "", gosvc, "-mode", "service", "-live", "64", "-listen", "127.0.0.1:0")
	for i := 0; cgroupStat(cg["go"], "rss") < 64<<20 && i < 200; i++ {
		time.Sleep(100 * time.Millisecond) // its live set made
	}
	startInCgroup(t, cg["reader"], nil, "written", rsReader(filepath.Join(fileDir, "data"))...)
	for i := 0; cgroupStat(cg["reader"], "active_file") < rsFileBytes/2 && i < 200; i++ {
		time.Sleep(100 * time.Millisecond) // its second reads make the pages active
	}
	startInCgroup(t, cg["leak"], nil, "leaking", rsLeak...)

	db := filepath.Join(t.TempDir(), "rightsize.db")
	r := startRecorder(t, db, 500*time.Millisecond, "--top", "100", "--cgroups", "100")
	time.Sleep(20 * time.Second)
	r.stop(t)

	run := func(args ...string) []rsItem {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"rightsize", "--from", db, "--cgroup", "/" + name, "--json"}, args...)...).Output()
		if err != nil {
			t.Fatalf("rightsize %v: %v\n%s", args, err, out)
		}
		var rep struct {
			Items []rsItem `json:"containers"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("rightsize --json: %v\n%s", err, out)
		}
		return rep.Items
	}
	// The default minimum range (a day) refuses 20 s of data, saying what
	// it needs.
	for _, it := range run() {
		if !strings.Contains(it.Refused, "too little data") || !strings.Contains(it.Refused, "--min-range") {
			t.Errorf("%s: from 20 s with the default --min-range: %q, want a refusal for too little data", it.Name, it.Refused)
		}
	}
	got := map[string]rsItem{}
	for _, it := range run("--min-range", "10s") {
		got[filepath.Base(it.Cgroup)] = it
		t.Logf("%s: request %d MiB, limit %d MiB; unreclaimable p99 %d MiB max %d MiB, cache max %d MiB need %d MiB, working set max %d MiB; common rule %d MiB %s; refused %q",
			it.Cgroup, it.RequestBytes>>20, it.LimitBytes>>20, it.UnreclP99>>20, it.UnreclMax>>20, it.CacheMax>>20, it.CacheNeed>>20, it.WorkingSetMax>>20,
			it.Common.LimitBytes>>20, it.Common.Verdict, it.Refused)
		t.Logf("  page cache need: %s", it.CacheWhy)
		for _, s := range it.Settings {
			t.Logf("  %s %s=%s (was %s): %s", s.Runtime, s.Name, s.Value, s.Was, s.Why)
		}
	}
	for _, w := range []string{"jvm", "go", "reader", "leak"} {
		if _, ok := got[w]; !ok {
			t.Fatalf("no recommendation for the %s cgroup: %v\nrecorder log:\n%s", w, got, r.logText())
		}
	}

	// The leak is refused with the leak, not given a bigger limit.
	if l := got["leak"]; l.Leak == nil || !strings.HasPrefix(l.Refused, "leak:") || l.LimitBytes != 0 {
		t.Errorf("leaking process: refused %q, leak %v, limit %d: want a refusal with the leak finding", l.Refused, l.Leak, l.LimitBytes)
	}
	// The JVM's limit holds its whole heap, which the range only touched
	// in part; -Xmx is named; the common rule's limit, from the working
	// set, is below what the JVM asks for.
	j := got["jvm"]
	if j.Refused != "" || j.LimitBytes < rsHeap+16<<20 || j.RuntimeNeed < rsHeap || j.UnreclMax >= rsHeap {
		t.Errorf("JVM with a fixed %d MiB heap: limit %d MiB, runtime need %d MiB, unreclaimable max %d MiB (refused %q): want a limit above the whole heap, which the range did not touch",
			rsHeap>>20, j.LimitBytes>>20, j.RuntimeNeed>>20, j.UnreclMax>>20, j.Refused)
	}
	if !hasSetting(j, "-Xmx", "256m") || j.Common.Verdict != "oom" {
		t.Errorf("JVM: settings %+v, common rule %+v: want -Xmx 256m kept and the common rule judged an OOM kill", j.Settings, j.Common)
	}
	// The Go service gets GOMEMLIMIT below its limit, and is told the
	// 300MiB it has is above the new limit.
	g := got["go"]
	gl := settingValue(g, "GOMEMLIMIT")
	if g.Refused != "" || gl == "" || !hasWas(g, "GOMEMLIMIT", "300MiB") {
		t.Errorf("Go service: refused %q, settings %+v: want GOMEMLIMIT with the 300MiB it had", g.Refused, g.Settings)
	} else if v, err := strconv.ParseInt(strings.TrimSuffix(gl, "MiB"), 10, 64); err != nil || v<<20 >= g.LimitBytes || v<<20 < g.UnreclMax {
		t.Errorf("Go service: GOMEMLIMIT=%s against a limit of %d MiB and %d MiB unreclaimable: want between the two", gl, g.LimitBytes>>20, g.UnreclMax>>20)
	}
	// The reader is not sized by its page cache, which the common rule
	// counts in its working set.
	rd := got["reader"]
	if rd.Refused != "" || rd.CacheMax < rsFileBytes*3/4 || rd.LimitBytes > rd.CacheMax/2 || rd.Common.Verdict != "waste" {
		t.Errorf("file reader: limit %d MiB with %d MiB of page cache (refused %q), common rule %+v: want a limit far below its cache, and the common rule judged a waste",
			rd.LimitBytes>>20, rd.CacheMax>>20, rd.Refused, rd.Common)
	}
	if t.Failed() {
		return
	}

	// Replays under the recommended limits: none is OOM-killed.
	type replay struct {
		name  string
		dir   string
		cmd   *exec.Cmd
		wantK bool
	}
	var rs []replay
	add := func(w string, limit int64, env []string, ready string, killed bool, argv ...string) {
		dir := testCgroup(t, "", fmt.Sprintf("%s_replay_%s", name, w), limit)
		rs = append(rs, replay{w, dir, startInCgroup(t, dir, env, ready, argv...), killed})
	}
	// The JVM with its whole heap touched up front: the worst the limit
	// must hold; and the same under the common rule's limit.
	add("jvm", j.LimitBytes, nil, "ready", false, rsJVM(classes, true)...)
	add("jvm-common", j.Common.LimitBytes, nil, "", true, rsJVM(classes, true)...)
	add("go", g.LimitBytes, []string{"GOMEMLIMIT=" + gl}, "", false, gosvc, "-mode", "service", "-live", "64", "-listen", "127.0.0.1:0")
	add("reader", rd.LimitBytes, nil, "written", false, rsReader(filepath.Join(fileDir, "replay"))...)
	time.Sleep(15 * time.Second)
	for _, x := range rs {
		kills := oomKillsIn(t, x.dir)
		up := alive(x.cmd)
		peak := peakOf(x.dir)
		t.Logf("replay %s: %d OOM kills, running %v, peak %d MiB", x.name, kills, up, peak>>20)
		if x.name == "reader" && peak < rd.LimitBytes*9/10 {
			t.Errorf("replay reader: its usage peaked at %d MiB under a %d MiB limit: the replay did not press its page cache against the limit", peak>>20, rd.LimitBytes>>20)
		}
		switch {
		case x.wantK && kills == 0:
			t.Errorf("replay %s under the common rule's limit: not OOM-killed, want the kill the data predicted", x.name)
		case !x.wantK && (kills > 0 || !up):
			t.Errorf("replay %s under the recommended limit: %d OOM kills, running %v", x.name, kills, up)
		}
	}
}

// peakOf is a cgroup's highest usage (v1 memory.max_usage_in_bytes, v2
// memory.peak).
func peakOf(dir string) int64 {
	for _, f := range []string{"memory.max_usage_in_bytes", "memory.peak"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n
		}
	}
	return 0
}

func hasSetting(it rsItem, name, value string) bool { return settingValue(it, name) == value }

func settingValue(it rsItem, name string) string {
	for _, s := range it.Settings {
		if s.Name == name {
			return s.Value
		}
	}
	return ""
}

func hasWas(it rsItem, name, was string) bool {
	for _, s := range it.Settings {
		if s.Name == name && s.Was == was {
			return true
		}
	}
	return false
}

// TestRightsizePrometheusContainers: a cadvisor + kube-state-metrics fleet
// (no node_exporter) backfilled into a real Prometheus. The page-cache-
// heavy containers get limits far below their usage, which the common
// rule wastes; the containers whose RSS climbs steadily are refused as
// growing; the OOM-killed ones are sized with their kill and restart
// counted, at low confidence; the healthy ones get a limit above their
// peak.
func TestRightsizePrometheusContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills containers into Prometheus")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	end := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	from := end.Add(-2 * 24 * time.Hour)
	hosts := []fleettest.Host{{Instance: "node-a:9100"}, {Instance: "node-b:9100"}}
	ctrs, err := fleettest.WriteContainers(filepath.Join(dir, "containers.om"), fleettest.ContainerOptions{
		Hosts: hosts, PerHost: 10, From: from, To: end, Interval: 5 * time.Minute, KillAfter: end.Add(-20 * time.Hour), Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range splitOpenMetrics(t, filepath.Join(dir, "containers.om"), 2*time.Hour) {
		if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", f, filepath.Join(dir, "tsdb")).CombinedOutput(); err != nil {
			t.Fatalf("promtool backfill of %s: %v\n%s", f, err, out)
		}
		_ = os.Remove(f)
	}
	srv := startPrometheus(t, dir, "")
	out, errOut, code := runBin(t, "rightsize", "--prometheus", srv.url, "--until", end.Format(time.RFC3339), "--range", "2d", "--json")
	if code != 0 {
		t.Fatalf("rightsize exited %d: %s", code, errOut)
	}
	var rep struct {
		Items []struct {
			rsItem
			Coarse     bool `json:"coarse"`
			Confidence struct {
				Level    string  `json:"level"`
				OOMKills float64 `json:"oom_kills"`
				Restarts float64 `json:"restarts"`
			} `json:"confidence"`
		} `json:"containers"`
		Queries int64 `json:"queries"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]int{}
	for i, it := range rep.Items {
		got[it.Name] = i
	}
	if len(rep.Items) != len(ctrs) {
		t.Errorf("%d recommendations for %d containers (the pause containers and pods' own series are not containers)", len(rep.Items), len(ctrs))
	}
	for _, c := range ctrs {
		i, ok := got[c.Key()]
		if !ok {
			t.Errorf("%s (%s): no recommendation", c.Key(), c.Kind)
			continue
		}
		it := rep.Items[i]
		if !it.Coarse {
			t.Errorf("%s: not marked coarse (cadvisor's split)", c.Key())
		}
		switch c.Kind {
		case fleettest.CacheHeavy:
			// Usage at 97% of the limit, four fifths page cache.
			if it.Refused != "" || it.LimitBytes > c.Limit/2 || it.Common.Verdict != "waste" {
				t.Errorf("%s page-cache heavy under %d MiB: limit %d MiB, refused %q, common rule %+v: want half its limit at most and the common rule a waste",
					c.Key(), c.Limit>>20, it.LimitBytes>>20, it.Refused, it.Common)
			}
		case fleettest.NearAnon:
			if !strings.HasPrefix(it.Refused, "leak:") {
				t.Errorf("%s: RSS climbing steadily to 94%% of its limit: refused %q, limit %d MiB: want the growth refused", c.Key(), it.Refused, it.LimitBytes>>20)
			}
		case fleettest.OOMRestarted:
			if it.Confidence.OOMKills < 1 || it.Confidence.Restarts != 1 || it.Confidence.Level != "low" {
				t.Errorf("%s OOM-killed and restarted: confidence %+v: want the kill and the restart counted, confidence low", c.Key(), it.Confidence)
			}
		case fleettest.Healthy, fleettest.OOMChild:
			if it.Refused != "" || it.LimitBytes < it.UnreclMax || it.LimitBytes > c.Limit {
				t.Errorf("%s (%s) at 30–60%% of %d MiB: limit %d MiB for an unreclaimable peak of %d MiB (refused %q)",
					c.Key(), c.Kind, c.Limit>>20, it.LimitBytes>>20, it.UnreclMax>>20, it.Refused)
			}
		}
	}
	t.Logf("%d containers, %d queries", len(rep.Items), rep.Queries)
	// The resize patches name each pod's containers, quoted for the shell.
	patch, errOut, code := runBin(t, "rightsize", "--prometheus", srv.url, "--until", end.Format(time.RFC3339), "--range", "2d", "--patch")
	if code != 0 || !strings.Contains(patch, "kubectl patch pod ") || !strings.Contains(patch, "--subresource resize --patch '{") {
		t.Errorf("--patch exited %d: %s\n%s", code, errOut, patch)
	}
}
