package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/compare"
	"github.com/memdoctor/memdoctor/internal/fleettest"
	"github.com/memdoctor/memdoctor/internal/incidenttest"
)

func compareJSON(t *testing.T, args ...string) *compare.Result {
	t.Helper()
	out, errOut, code := runBin(t, append([]string{"compare", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("compare %v exited %d: %s", args, code, errOut)
	}
	var r compare.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return &r
}

func row(t *testing.T, r *compare.Result, id string) compare.Row {
	t.Helper()
	for _, x := range r.Rows {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("no %s row in %+v", id, r.Rows)
	return compare.Row{}
}

// testCompareFleet runs against the backfilled fleet of TestFleetPrometheus.
func testCompareFleet(t *testing.T, url string, m *fleettest.Manifest) {
	until := m.End.Format(time.RFC3339)
	var leak []string
	for _, h := range m.WithPathology(fleettest.DyingCgroupsLeak) {
		leak = append(leak, regexp.QuoteMeta(h))
	}
	// The injected difference: hosts leaking dying cgroups against the
	// hosts on 5.3.
	r := compareJSON(t, "--prometheus", url, "--until", until, "--range", "7d",
		"--a", `{release=~"5.3.*"}`, "--b", `{instance=~"`+strings.Join(leak, "|")+`"}`)
	su := row(t, r, "slab_unreclaimable_growth_per_day")
	// The generator adds 400 MB a day on every leaking host.
	if !su.Real || su.Lo < 300e6 || su.Hi > 500e6 || len(su.B) != len(leak) {
		t.Errorf("slab growth: %+v; want a real difference near 400 MB/day over %d hosts", su, len(leak))
	}
	cg := row(t, r, "memory_cgroups_growth_per_day")
	if !cg.Real || cg.Lo < 5000 {
		t.Errorf("cgroup growth: diff %.0f [%.0f, %.0f], real %v; want about 10 000/day", cg.Diff, cg.Lo, cg.Hi, cg.Real)
	}
	av := row(t, r, "available_memory")
	if av.Diff >= 0 {
		t.Errorf("available memory: B − A = %.0f; the leaking hosts have less", av.Diff)
	}
	// No difference where none was injected: two racks of healthy 5.3 hosts.
	q := compareJSON(t, "--prometheus", url, "--until", until, "--range", "7d", "--a", `{rack="r03"}`, "--b", `{rack="r04"}`)
	if x := row(t, q, "slab_unreclaimable_growth_per_day"); x.Real {
		t.Errorf("two healthy racks differ in slab growth? %s", x.Verdict)
	}
	if x := row(t, q, "memory_cgroups_growth_per_day"); x.Real {
		t.Errorf("two healthy racks differ in cgroup growth? %s", x.Verdict)
	}
	// Text, and overlapping groups.
	out, errOut, code := runBin(t, "compare", "--prometheus", url, "--until", until, "--a", `{rack="r03"}`, "--b", `{rack="r04"}`)
	if code != 0 || !strings.Contains(out, "no clear difference") || !strings.Contains(out, "10 hosts") {
		t.Errorf("text: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runBin(t, "compare", "--prometheus", url, "--until", until, "--a", `{rack="r03"}`, "--b", `{job="node"}`)
	if code == 0 || !strings.Contains(errOut, "in both groups") {
		t.Errorf("overlapping groups: exit %d, %s", code, errOut)
	}
}

// testAlertsBaseline: per-host baselines from the fleet's Prometheus.
func testAlertsBaseline(t *testing.T, url string, m *fleettest.Manifest) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	f := filepath.Join(t.TempDir(), "memdoctor.yml")
	_, errOut, code := runBin(t, "alerts", "--baseline-from", url, "--until", m.End.Format(time.RFC3339), "-o", f)
	if code != 0 {
		t.Fatalf("alerts exited %d: %s", code, errOut)
	}
	out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(f)
	if n := strings.Count(string(b), "record: memdoctor:memory_used_baseline_bytes"); n != len(m.Hosts) {
		t.Errorf("%d baselines for %d hosts", n, len(m.Hosts))
	}
}

// TestCompareRecordings is incident 1's experiment on its own data: a
// host on 5.0 against one on 5.3 (two sources, compared day by day), and
// two weeks of one source against each other.
func TestCompareRecordings(t *testing.T) {
	skipShort(t)
	// Its CPU goes to recordings of its own (about 20 s of it), judging
	// neither time nor the host: it runs among the waiting tests.
	t.Parallel()
	dir := t.TempDir()
	d50, d53 := filepath.Join(dir, "k50"), filepath.Join(dir, "k53")
	for _, c := range []struct {
		dir   string
		shape incidenttest.Incident1Shape
	}{{d50, incidenttest.Shape50}, {d53, incidenttest.Shape53}} {
		if err := incidenttest.WriteIncident1CronDir(c.dir, incidenttest.Incident1Options{Days: 8, Interval: 30 * time.Minute, Shape: c.shape}); err != nil {
			t.Fatal(err)
		}
	}
	r := compareJSON(t, d53, d50)
	if r.Unit != "day" {
		t.Errorf("unit %q, want day (one host per group)", r.Unit)
	}
	su := row(t, r, "slab_unreclaimable_growth_per_day")
	// 4 GB a week on 5.0; nothing lasting on 5.3.
	if !su.Real || su.Lo < 400e6 || su.Hi > 750e6 {
		t.Errorf("5.0 vs 5.3 slab growth: %s", su.Verdict)
	}
	if cg := row(t, r, "memory_cgroups_growth_per_day"); !cg.Real || cg.Lo < 5000 {
		t.Errorf("5.0 vs 5.3 cgroup growth: %s", cg.Verdict)
	}
	// Two windows of the same steady leak: same growth per day.
	w := compareJSON(t, d50, "--a-window", "2020-01-01/2020-01-05", "--b-window", "2020-01-05/2020-01-09")
	if x := row(t, w, "slab_unreclaimable_growth_per_day"); x.Real {
		t.Errorf("the same leak in two windows differs? %s", x.Verdict)
	}
	if len(row(t, w, "slab_unreclaimable_growth_per_day").A) != 4 {
		t.Errorf("window A: %d days, want 4", len(row(t, w, "slab_unreclaimable_growth_per_day").A))
	}
	// Alerts with the recording's baseline: the median of its daily peaks.
	if pt, err := exec.LookPath("promtool"); err == nil {
		f := filepath.Join(dir, "rules.yml")
		if _, errOut, code := runBin(t, "alerts", "--baseline-from", d50, "-o", f); code != 0 {
			t.Fatalf("alerts --baseline-from: %s", errOut)
		}
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(b), "record: memdoctor:memory_used_baseline_bytes") || !strings.Contains(string(b), `memdoctor_baseline_days: "7"`) {
			t.Errorf("no 7-day baseline in:\n%s", b)
		}
		if out, err := exec.Command(pt, "check", "rules", f).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules: %v\n%s", err, out)
		}
	}
	// Same data, same interval (the bootstrap is seeded).
	again := compareJSON(t, d53, d50)
	if a, b := row(t, r, "slab_unreclaimable_growth_per_day"), row(t, again, "slab_unreclaimable_growth_per_day"); a.Lo != b.Lo || a.Hi != b.Hi {
		t.Errorf("not reproducible: [%g, %g] then [%g, %g]", a.Lo, a.Hi, b.Lo, b.Hi)
	}
}

// TestCompareProbeResults: probe result files are recognised by their kind
// and dispatched to the probe comparison.
func TestCompareProbeResults(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte(`{"kind": "memdoctor-probe", "version": 1, "runs": []}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Dispatched to the probe comparison, which refuses empty results
	// (the comparison of real ones: TestProbeRubyGCAfterRequest).
	_, errOut, code := runBin(t, "compare", a, b)
	if code == 0 || !strings.Contains(errOut, "not a memdoctor probe result: it holds no requests") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	// Bad input: one source without windows, a missing file.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", a}, "two windows"},
		{[]string{"compare", filepath.Join(dir, "nope.db"), filepath.Join(dir, "nope2.db")}, "group A"},
		{[]string{"compare", "--prometheus", "http://127.0.0.1:1", "--a", "{x=\"1\"}"}, "--a and --b"},
	} {
		_, errOut, code := runBin(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errOut, c.want)
		}
	}
}
