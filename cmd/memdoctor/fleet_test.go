package main

// A synthetic fleet with known pathologies on known hosts, backfilled into
// a real Prometheus (Debian's package) with promtool and served on
// loopback; the real memdoctor binary diagnoses and compares it.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/fleettest"
	htmlpage "github.com/memdoctor/memdoctor/internal/render/html"
)

// promServer is a Prometheus started on a TSDB directory.
type promServer struct {
	url string
	cmd *exec.Cmd
}

// startPrometheus runs Debian's prometheus on dir (blocks already there),
// with config (may be "") on a free loopback port.
func startPrometheus(t *testing.T, dir, config string, extra ...string) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (apt-get install prometheus)")
	}
	if config == "" {
		config = filepath.Join(dir, "empty.yml")
		if err := os.WriteFile(config, []byte("global:\n  scrape_interval: 15s\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--config.file=" + config, "--storage.tsdb.path=" + filepath.Join(dir, "tsdb"),
		"--storage.tsdb.retention.time=10y", "--web.listen-address=" + addr,
		// Backfilled blocks stay as they are: no compaction during tests.
		"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test binary that dies (a crash, a timeout) takes its Prometheus along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		_ = logf.Close()
	})
	url := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus not ready after 60 s:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return &promServer{url: url, cmd: cmd}
}

// backfilledFleet generates a fleet into dir and backfills it with promtool.
func backfilledFleet(t *testing.T, dir string, o fleettest.Options) *fleettest.Manifest {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	m, err := fleettest.Plan(o).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]string, len(m.Files))
	for i, f := range m.Files {
		files[i] = filepath.Join(dir, f)
	}
	backfill(t, promtool, filepath.Join(dir, "tsdb"), files)
	return m
}

// backfill writes OpenMetrics files into the TSDB directory tsdb with
// promtool, as many at a time as there are CPUs, and removes each file
// once it is in. Each file holds whole blocks of its own and promtool
// names each block it writes afresh, so the files go in in any order;
// promtool's work on one file is about one CPU's.
func backfill(t *testing.T, promtool, tsdb string, files []string) {
	t.Helper()
	if err := backfillFiles(promtool, tsdb, files, false); err != nil {
		t.Fatal(err)
	}
}

// backfillFiles is backfill, returning its first error; with keep, the
// files stay where they are.
func backfillFiles(promtool, tsdb string, files []string, keep bool) error {
	work := make(chan string)
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	for range min(runtime.NumCPU(), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", f, tsdb).CombinedOutput()
				if err != nil {
					errs <- fmt.Errorf("promtool backfill of %s: %w\n%s", f, err, out)
					continue
				}
				if !keep {
					_ = os.Remove(f)
				}
			}
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs // nil once closed and empty
}

// sharedFleetOptions is the fleet TestFleetPrometheus and
// TestFleetVictoriaMetricsSameVerdicts read: 60 hosts, 15 days every 10
// minutes, ending at midnight UTC, where the rules' days and Prometheus'
// steps meet (`--range 14d` reads 14 whole days, 13 before the one
// judged; TestGoldenFleetScan reads a fleet ending at 07:00).
func sharedFleetOptions() fleettest.Options {
	end := time.Now().UTC().Add(-3 * time.Hour).Truncate(24 * time.Hour)
	return fleettest.Options{Hosts: 60, Days: 15, Interval: 10 * time.Minute, End: end, Seed: 11}
}

// sharedFleet generates that fleet once per test run and backfills it into
// a Prometheus TSDB there (dir/tsdb) for the tests that only read it: each
// starts its own Prometheus on dir. The OpenMetrics files stay (files,
// 125 MB, removed with dir at the end of the run) for VictoriaMetrics'
// import. promtool's backfill is most of the cost (25 s of CPU at 60
// hosts, 38 s at 100), which each test paid before.
func sharedFleet(t *testing.T) (dir string, m *fleettest.Manifest, files []string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	dir = buildOnce(t, "fleet", func(dir string) (string, error) {
		m, err := fleettest.Plan(sharedFleetOptions()).Write(dir)
		if err != nil {
			return "", err
		}
		files := make([]string, len(m.Files))
		for i, f := range m.Files {
			files[i] = filepath.Join(dir, f)
		}
		return dir, backfillFiles(promtool, filepath.Join(dir, "tsdb"), files, true)
	})
	if m, err = fleettest.LoadManifest(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		files = append(files, filepath.Join(dir, f))
	}
	return dir, m, files
}

func runBin(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // the concrete type is what exec returns
			return o.String(), e.String(), ee.ExitCode()
		}
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// fired returns, per judged rule, the instances it fired on.
func fired(res *fleet.Result) map[string][]string {
	judged := map[string]bool{}
	for _, r := range fleettest.JudgedRules {
		judged[r] = true
	}
	out := map[string][]string{}
	for _, in := range res.Instances {
		for _, f := range in.Findings {
			if judged[f.ID] && !slices.Contains(out[f.ID], in.Instance) {
				out[f.ID] = append(out[f.ID], in.Instance)
			}
		}
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func TestFleetPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills a fleet into Prometheus (about a minute)")
	}
	dir, m, _ := sharedFleet(t)
	srv := startPrometheus(t, dir, "")
	until := m.End.Format(time.RFC3339)

	diag := func(t *testing.T, extra ...string) *fleet.Result {
		t.Helper()
		args := append([]string{"diagnose", "--prometheus", srv.url, "--until", until, "--range", "14d", "--json"}, extra...)
		out, errOut, code := runBin(t, args...)
		if code != 0 {
			t.Fatalf("diagnose exited %d: %s", code, errOut)
		}
		var res fleet.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return &res
	}

	var scanned *fleet.Result
	t.Run("finds exactly the injected hosts", func(t *testing.T) {
		res := diag(t, "--by", "rack")
		scanned = res
		if len(res.Instances) != len(m.Hosts) {
			t.Fatalf("%d instances scanned, the fleet has %d", len(res.Instances), len(m.Hosts))
		}
		got := fired(res)
		for _, rule := range fleettest.JudgedRules {
			if msg := m.Check(rule, got[rule]); msg != "" {
				t.Errorf("%s (injected on %v)", msg, m.Expecting(rule))
			}
		}
		// A few queries per rule scan the whole fleet, however many hosts
		// it has; only suspects are fetched.
		if maxQ := int64(2*len(diagnose.Rules()) + 4); res.Cost.ScanQueries > maxQ {
			t.Errorf("the scan took %d queries; want at most %d (two a rule, four of its own)", res.Cost.ScanQueries, maxQ)
		}
		// Then the suspects' ranges, eight hosts a query, and one query that
		// finds no Kubernetes containers here (so none are asked for).
		if maxQ := res.Cost.ScanQueries + 1 + int64(res.Suspects+7)/8; res.Cost.Queries > maxQ {
			t.Errorf("%d queries in all for %d suspects; want at most %d", res.Cost.Queries, res.Suspects, maxQ)
		}
		if res.Suspects >= len(m.Hosts) || res.Suspects < len(fired(res)["dying_cgroups"]) {
			t.Errorf("%d suspects of %d hosts", res.Suspects, len(m.Hosts))
		}
		// Ranking: the worst first.
		if res.Instances[0].Severity != "critical" || len(res.Instances[len(res.Instances)-1].Findings) != 0 {
			t.Errorf("ranking: first %s (%s), last with %d findings", res.Instances[0].Instance, res.Instances[0].Severity, len(res.Instances[len(res.Instances)-1].Findings))
		}
		t.Logf("%d instances, %d suspects, %d queries (%d for the scan), %d bytes on the wire, %.1fs",
			len(res.Instances), res.Suspects, res.Cost.Queries, res.Cost.ScanQueries, res.Cost.WireBytes, res.Cost.DurationSeconds)
	})

	t.Run("correlates the leak with the kernel", func(t *testing.T) {
		if scanned == nil {
			t.Skip("scan failed")
		}
		var c *fleet.Correlation
		for i := range scanned.Correlation {
			if x := &scanned.Correlation[i]; x.Rule == "dying_cgroups" && x.Label == "release" {
				c = x
			}
		}
		if c == nil {
			t.Fatalf("no dying_cgroups × release correlation: %+v", scanned.Correlation)
		}
		leak := len(m.WithPathology(fleettest.DyingCgroupsLeak))
		on53 := 0
		for _, h := range m.Hosts {
			if h.Release == fleettest.Kernel53 {
				on53++
			}
		}
		want := fmt.Sprintf("dying_cgroups: %d of %d hosts; all on kernel 5.0.x", leak, len(m.Hosts))
		if !c.Concentrated || !strings.HasPrefix(c.Summary, want) || !strings.Contains(c.Summary, fmt.Sprintf("none of %d on kernel 5.3.x", on53)) {
			t.Errorf("correlation: %q; want it to start %q and name none of %d on 5.3.x", c.Summary, want, on53)
		}
		for _, x := range scanned.Correlation {
			if x.Label == "rack" && x.Concentrated && x.Rule == "dying_cgroups" {
				t.Errorf("the leak spans several racks, yet: %s", x.Summary)
			}
		}
	})

	var allScan *fleet.Result
	t.Run("the pre-filter loses nothing", func(t *testing.T) {
		all := diag(t, "--all")
		allScan = all
		if all.Suspects != len(m.Hosts) {
			t.Fatalf("--all fetched %d of %d", all.Suspects, len(m.Hosts))
		}
		a, b := fired(all), fired(scanned)
		for _, rule := range fleettest.JudgedRules {
			if !slices.Equal(a[rule], b[rule]) {
				t.Errorf("%s: every host judged in full: %v; pre-filtered: %v", rule, a[rule], b[rule])
			}
		}
	})

	t.Run("text report", func(t *testing.T) {
		out, errOut, code := runBin(t, "diagnose", "--prometheus", srv.url, "--until", until, "--top", "3")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		for _, want := range []string{fmt.Sprintf("%d instances", len(m.Hosts)), "aggregated queries", "CORRELATIONS", "all on kernel 5.0.x", "more (--top"} {
			if !strings.Contains(out, want) {
				t.Errorf("text report lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("html report", func(t *testing.T) {
		if scanned == nil {
			t.Skip("scan failed")
		}
		html := filepath.Join(t.TempDir(), "fleet.html")
		out, errOut, code := runBin(t, "report", "--prometheus", srv.url, "--until", until, "--range", "14d", "--top", "4", "-o", html, "--json")
		if code != 0 {
			t.Fatalf("report exit %d: %s", code, errOut)
		}
		var sum struct {
			Findings  int `json:"findings"`
			Charts    int `json:"charts"`
			Instances []struct {
				Instance string `json:"instance"`
			} `json:"instances"`
		}
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		b, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		// The four worst instances of the scan, with its findings, charts
		// drawn from the series Prometheus holds for them, and the fleet's
		// correlation at the top.
		var want []string
		findings := 0
		for _, in := range scanned.Instances {
			if len(in.Findings) > 0 && len(want) < 4 {
				want = append(want, in.Instance)
				findings += len(in.Findings)
			}
		}
		var got []string
		for _, in := range sum.Instances {
			got = append(got, in.Instance)
		}
		if !slices.Equal(got, want) {
			t.Errorf("report instances %v, the scan's worst %v", got, want)
		}
		if sum.Findings != findings || sum.Charts == 0 {
			t.Errorf("report: %d findings (scan: %d), %d charts", sum.Findings, findings, sum.Charts)
		}
		for _, w := range []string{fmt.Sprintf("%d instances scanned", len(m.Hosts)), "all on kernel 5.0.x", `data-series="node_memory_SUnreclaim_bytes`, `data-rule="dying_cgroups"`} {
			if !strings.Contains(page, w) {
				t.Errorf("report lacks %q", w)
			}
		}
		// The index: every instance with findings, each of its rules
		// under the anchor made from the two; the four drawn in full
		// linked from their groups to their articles.
		affected := 0
		for _, in := range scanned.Instances {
			if len(in.Findings) == 0 {
				continue
			}
			affected++
			for _, f := range in.Findings {
				if !strings.Contains(page, ` id="`+htmlpage.FindingAnchor(in.Instance, f.ID)+`"`) {
					t.Errorf("report: no anchor for %s's %s", in.Instance, f.ID)
				}
			}
		}
		if w := fmt.Sprintf(`<section id="fleet" data-scanned="%d" data-affected="%d">`, len(m.Hosts), affected); !strings.Contains(page, w) {
			t.Errorf("report lacks the fleet index %s", w)
		}
		if !strings.Contains(page, `<a href="#finding-1">`) {
			t.Error("report: no group links to a finding drawn in full")
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--prometheus", "http://127.0.0.1:1", "--prometheus-retries", "0"}, "cannot reach prometheus"},
			{[]string{"--prometheus", srv.url, "--match", `{job="nosuch"}`, "--until", until}, "no instance has node_memory_MemTotal_bytes{job=\"nosuch\"}"},
			{[]string{"--prometheus", srv.url, "--match", `{job=~"(("}`, "--until", until}, "not a label selector"},
			{[]string{"--prometheus", "ftp://x"}, "want http(s)://"},
			{[]string{"--prometheus", srv.url, "--range", "soon"}, "--range"},
		} {
			_, errOut, code := runBin(t, append([]string{"diagnose"}, c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("diagnose %v: exit %d, stderr %q; want an error containing %q", c.args, code, errOut, c.want)
			}
		}
	})

	t.Run("resumes a stopped scan", func(t *testing.T) {
		if allScan == nil {
			t.Skip("the scan of every host failed")
		}
		testResume(t, srv.url, until, allScan)
	})

	t.Run("compare", func(t *testing.T) { testCompareFleet(t, srv.url, m) })
	t.Run("alerts baseline", func(t *testing.T) { testAlertsBaseline(t, srv.url, m) })
}
