package main

// memdoctor report end to end: a cron directory of real kernel text with
// incident 1's shape, and a recorded store with two instances, become one
// HTML file whose findings are diagnose's and whose charts draw the data;
// headless chromium opens it (and record's live page) without a single
// console error, and screenshots and a printed PDF are kept.

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/incidenttest"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/seriestest"
	"github.com/memdoctor/memdoctor/internal/source"
	"github.com/memdoctor/memdoctor/internal/store"
)

// htmlArticle is one finding read back from a report.
type htmlArticle struct {
	rule, severity, body string
}

var (
	articleRE = regexp.MustCompile(`(?s)<article class="finding [a-z]+" id="[^"]*" data-rule="([^"]*)" data-severity="([^"]*)">(.*?)</article>`)
	figureRE  = regexp.MustCompile(`(?s)<figure class="chart" id="([^"]*)" data-chart="([^"]*)"(.*?)</figure>`)
	refRE     = regexp.MustCompile(`<p class="chartref muted" data-chart="([^"]*)">Chart: <a href="#([^"]*)">`)
	pathRE    = regexp.MustCompile(`<path class="(line|area)[^"]*" d="[^"]*" data-series="([^"]*)" data-axis="([^"]*)" data-points="(\d+)" data-min="([^"]*)" data-max="([^"]*)"`)
)

func articles(page string) []htmlArticle {
	var out []htmlArticle
	for _, m := range articleRE.FindAllStringSubmatch(page, -1) {
		out = append(out, htmlArticle{rule: m[1], severity: m[2], body: m[3]})
	}
	return out
}

type htmlPath struct {
	kind, series, axis string
	points             int
	min, max           float64
}

// charts returns the charts a piece of the page shows (drawn there, or
// referred to and drawn elsewhere in page): id → drawn series.
func charts(page, fragment string) map[string][]htmlPath {
	out := map[string][]htmlPath{}
	byAnchor := map[string][]htmlPath{}
	for _, f := range figureRE.FindAllStringSubmatch(page, -1) {
		var ps []htmlPath
		for _, p := range pathRE.FindAllStringSubmatch(f[3], -1) {
			n, _ := strconv.Atoi(p[4])
			lo, _ := strconv.ParseFloat(html.UnescapeString(p[5]), 64)
			hi, _ := strconv.ParseFloat(html.UnescapeString(p[6]), 64)
			ps = append(ps, htmlPath{kind: p[1], series: html.UnescapeString(p[2]), axis: p[3], points: n, min: lo, max: hi})
		}
		byAnchor[f[1]] = ps
	}
	for _, f := range figureRE.FindAllStringSubmatch(fragment, -1) {
		out[f[2]] = byAnchor[f[1]]
	}
	for _, r := range refRE.FindAllStringSubmatch(fragment, -1) {
		out[r[1]] = byAnchor[r[2]]
	}
	return out
}

func pathOf(t *testing.T, ps []htmlPath, series string) htmlPath {
	t.Helper()
	for _, p := range ps {
		if p.series == series {
			return p
		}
	}
	t.Fatalf("no path draws %s (drawn: %+v)", series, ps)
	return htmlPath{}
}

// rawExtent is the minimum and maximum of a series' raw samples.
func rawExtent(t *testing.T, st *store.Store, inst, name string, match ...string) (float64, float64) {
	t.Helper()
	ss, err := st.Select(store.Query{Instance: inst, Names: []string{name}, Match: match})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("%s%v: %d series", name, match, len(ss))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range ss[0].Points {
		lo, hi = math.Min(lo, p.V), math.Max(hi, p.V)
	}
	return lo, hi
}

func writeReport(t *testing.T, args ...string) (string, reportSummary) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.html")
	stdout, stderr, code := runCLI(t, append([]string{"report", "-o", out, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("report exited %d: %s", code, stderr)
	}
	var sum reportSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("report --json: %v\n%s", err, stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Bytes != len(b) || sum.Output != out {
		t.Errorf("--json says %d bytes in %s, the file has %d", sum.Bytes, sum.Output, len(b))
	}
	return string(b), sum
}

// Incident 1 from a cron directory: the report's findings are diagnose's,
// in severity order, and the dying-cgroups finding draws SUnreclaim against
// the memory cgroup count with the extremes of the recorded data.
func TestReportIncident1(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir := incidentDir(t, incidenttest.Shape50)
	page, sum := writeReport(t, "--from", dir)
	want := diagnoseJSON(t, dir)
	arts := articles(page)
	if len(arts) != len(want.Findings) || sum.Findings != len(want.Findings) {
		t.Fatalf("%d findings in the report (%d said), diagnose has %d", len(arts), sum.Findings, len(want.Findings))
	}
	for i, f := range want.Findings {
		if arts[i].rule != f.ID || arts[i].severity != string(f.Severity) {
			t.Errorf("finding %d: report %s/%s, diagnose %s/%s", i, arts[i].rule, arts[i].severity, f.ID, f.Severity)
		}
		text := html.UnescapeString(arts[i].body)
		if !strings.Contains(text, f.Summary) {
			t.Errorf("finding %s: summary missing", f.ID)
		}
		for _, r := range f.Remedies {
			for _, c := range r.Commands {
				if !strings.Contains(text, "$ "+c) {
					t.Errorf("finding %s: command %q missing", f.ID, c)
				}
			}
		}
	}
	// The same data in a store, to compare the charts with.
	st, err := store.Open(filepath.Join(t.TempDir(), "i1.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ist, err := source.Ingest(dir, st, source.IngestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inst := ist.Instances[0]
	var dying *htmlArticle
	for i := range arts {
		if arts[i].rule == "dying_cgroups" {
			dying = &arts[i]
		}
	}
	if dying == nil {
		t.Fatal("no dying_cgroups finding in the report")
	}
	cs := charts(page, dying.body)
	slab, ok := cs["slab_vs_cgroups"]
	if !ok {
		t.Fatalf("dying_cgroups shows %v, not slab_vs_cgroups", cs)
	}
	su := pathOf(t, slab, "node_memory_SUnreclaim_bytes")
	lo, hi := rawExtent(t, st, inst, "node_memory_SUnreclaim_bytes")
	if su.axis != "left" || su.min != lo || su.max != hi {
		t.Errorf("SUnreclaim drawn on %s over [%g, %g]; recorded [%g, %g]", su.axis, su.min, su.max, lo, hi)
	}
	var right []string
	for _, p := range slab {
		if p.axis == "right" {
			right = append(right, p.series)
			name, match := splitKey(t, p.series)
			lo, hi := rawExtent(t, st, inst, name, match...)
			if p.min != lo || p.max != hi {
				t.Errorf("%s drawn over [%g, %g]; recorded [%g, %g]", p.series, p.min, p.max, lo, hi)
			}
		}
	}
	if len(right) == 0 {
		t.Errorf("no memory cgroup count on the right axis: %+v", slab)
	}
	if su.points < 300 {
		t.Errorf("SUnreclaim drawn with %d buckets over 14 days", su.points)
	}
}

// splitKey splits a series key, name{a="b",...}, into the name and label
// pairs.
func splitKey(t *testing.T, key string) (string, []string) {
	t.Helper()
	name, ls, err := sample.ParseKey(key)
	if err != nil {
		t.Fatalf("series %q: %v", key, err)
	}
	var match []string
	for _, l := range ls {
		match = append(match, l.Name, l.Value)
	}
	return name, match
}

// seriesToStore appends the series of a .series file to st as one
// instance's samples.
func seriesToStore(st *store.Store, file, instance string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	w, err := seriestest.Parse(string(b))
	if err != nil {
		return err
	}
	byT := map[int64]*sample.Snapshot{}
	for _, s := range w.Series {
		for _, p := range s.Points {
			sc := byT[p.T]
			if sc == nil {
				sc = &sample.Snapshot{Time: time.UnixMilli(p.T)}
				byT[p.T] = sc
			}
			sc.AddMetric(sample.Metric{Name: s.Name, Labels: s.Labels, Value: p.V})
		}
	}
	var snapshots []*sample.Snapshot
	for _, sc := range byT {
		snapshots = append(snapshots, sc)
	}
	sort.Slice(snapshots, func(i, j int) bool { return snapshots[i].Time.Before(snapshots[j].Time) })
	return st.Append(instance, snapshots...)
}

// twoHostStore returns a store of the test's own: a copy of one
// recording of two hosts made once per run for the three tests that read
// it, incident 1's cron directory (cron text) as game7 and the chart
// fixture host (every charted kind of series, GC included) as web1.
func twoHostStore(t *testing.T) string {
	t.Helper()
	k50 := incidentDir(t, incidenttest.Shape50)
	series := filepath.Join(repoRoot(t), "internal", "render", "html", "testdata", "host.series")
	src := buildOnce(t, "two-host-store", func(dir string) (string, error) {
		db := filepath.Join(dir, "two.db")
		st, err := store.Open(db, store.Options{})
		if err != nil {
			return "", err
		}
		if _, err := source.Ingest(k50, st, source.IngestOptions{Instance: "game7"}); err != nil {
			_ = st.Close()
			return "", err
		}
		if err := seriesToStore(st, series, "web1"); err != nil {
			_ = st.Close()
			return "", err
		}
		return db, st.Close()
	})
	db := filepath.Join(t.TempDir(), "two.db")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return db
}

// A recording of two hosts: both instances' findings, each with charts from
// its own data; --instance narrows to one.
func TestReportTwoInstances(t *testing.T) {
	skipShort(t)
	t.Parallel()
	db := twoHostStore(t)
	page, sum := writeReport(t, "--from", db)
	if len(sum.Instances) != 2 {
		t.Fatalf("%d instances", len(sum.Instances))
	}
	for _, inst := range []string{"game7", "web1"} {
		if !strings.Contains(page, `data-instance="`+inst+`"`) {
			t.Errorf("instance %s not described", inst)
		}
	}
	ov := charts(page, page[strings.Index(page, `<section id="overview">`):])
	if !strings.Contains(page[strings.Index(page, `<section id="overview">`):], `data-chart="gc_time_share"`) {
		t.Error("the overview does not show the GC charts")
	}
	for _, id := range []string{"memory_categories", "gc_time_share", "gc_collections"} {
		if _, ok := ov[id]; !ok {
			t.Errorf("overview lacks %s: %v", id, ov)
		}
	}
	gc := pathOf(t, ov["gc_time_share"], `rate(memdoctor_runtime_gc_seconds_total{comm="java",pid="20",runtime="jvm",target="pid/20"})`)
	if math.Abs(gc.max-0.1) > 1e-9 {
		t.Errorf("GC time share drawn up to %g, want 0.1 (90 s of GC per 15 minutes)", gc.max)
	}
	one, sum1 := writeReport(t, "--from", db, "--instance", "web1")
	if len(sum1.Instances) != 1 || strings.Contains(one, `data-instance="game7"`) {
		t.Error("--instance web1 still reports game7")
	}
}

// Bad invocations say what to do.
func TestReportErrors(t *testing.T) {
	skipShort(t)
	t.Parallel()
	db := twoHostStore(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--from", db}, "-o FILE is required"},
		{[]string{"report", "-o", filepath.Join(t.TempDir(), "r.html")}, "--from is required"},
		{[]string{"report", "--from", db, "--instance", "nope", "-o", filepath.Join(t.TempDir(), "r.html")}, `--instance "nope": not in`},
		{[]string{"report", "--from", db, "-o", filepath.Join(t.TempDir(), "missing", "r.html")}, "choose another place"},
		{[]string{"report", "--from", filepath.Join(t.TempDir(), "none.db"), "-o", filepath.Join(t.TempDir(), "r.html")}, "no such file"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want an error saying %q", tc.args, code, stderr, tc.want)
		}
	}
	// Standard output.
	stdout, stderr, code := runCLI(t, "report", "--from", db, "--instance", "web1", "-o", "-")
	if code != 0 || !strings.HasPrefix(stdout, "<!DOCTYPE html>") {
		t.Errorf("-o -: exit %d %s", code, stderr)
	}
}

// browserChecks opens a page in chromium and checks it: no console error,
// every chart drawn with a visible size, no horizontal overflow on a phone,
// the navigation hidden in print; it saves screenshots and a PDF.
func browserChecks(t *testing.T, d *devtools, u, name string) {
	t.Helper()
	if errs := d.open(t, u); len(errs) > 0 {
		t.Errorf("%s: the browser reports errors:\n%s", u, strings.Join(errs, "\n"))
	}
	var st struct {
		Figures, Paths, Invisible int
	}
	d.eval(t, `(() => {
		const paths = [...document.querySelectorAll('figure.chart svg path[data-series]')];
		return {Figures: document.querySelectorAll('figure.chart').length, Paths: paths.length,
			Invisible: paths.filter(p => { const b = p.getBBox(); return b.width <= 0 && b.height <= 0; }).length};
	})()`, &st)
	if st.Figures == 0 || st.Paths == 0 || st.Invisible > 0 {
		t.Errorf("%s: %d charts, %d drawn series, %d of them invisible", u, st.Figures, st.Paths, st.Invisible)
	}
	dir := artifactsDir(t)
	d.screenshot(t, filepath.Join(dir, name+"-laptop.png"), 1280, false)
	d.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true})
	var overflow float64
	d.eval(t, `document.documentElement.scrollWidth - 390`, &overflow)
	if overflow > 1 {
		var wide []string
		d.eval(t, `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 391).slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right) + ': ' + (e.textContent || '').slice(0, 40))`, &wide)
		t.Errorf("%s: on a 390 px phone the page is %g px wider than the screen; too wide:\n%s", u, overflow, strings.Join(wide, "\n"))
	}
	d.call(t, "Emulation.clearDeviceMetricsOverride", nil)
	d.screenshot(t, filepath.Join(dir, name+"-phone.png"), 390, true)
	d.call(t, "Emulation.setEmulatedMedia", map[string]any{"media": "print"})
	var navShown bool
	d.eval(t, `[...document.querySelectorAll('nav')].some(n => getComputedStyle(n).display !== 'none')`, &navShown)
	if navShown {
		t.Errorf("%s: the table of contents is printed", u)
	}
	d.call(t, "Emulation.setEmulatedMedia", map[string]any{"media": ""})
	pdf := d.printPDF(t, filepath.Join(dir, name+".pdf"))
	if !bytes.HasPrefix(pdf, []byte("%PDF")) || len(pdf) < 10<<10 {
		t.Errorf("%s: printing gave %d bytes", u, len(pdf))
	}
	t.Logf("%s: %d charts, %d series; screenshots and PDF in %s", u, st.Figures, st.Paths, dir)
}

// The report of two hosts opens in chromium without errors.
func TestReportInBrowser(t *testing.T) {
	skipShort(t)
	db := twoHostStore(t)
	out := filepath.Join(t.TempDir(), "report.html")
	if _, stderr, code := runCLI(t, "report", "--from", db, "-o", out); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	b := startBrowser(t)
	browserChecks(t, b.page(t), "file://"+out, "report")
	cp, _ := os.ReadFile(out)
	_ = os.WriteFile(filepath.Join(artifactsDir(t), "report.html"), cp, 0o644)
}

// record --listen serves the report of the recording so far at /: read-only,
// rendered once for any number of requests within its period, reloading
// itself; /metrics and /healthz are unchanged; chromium opens it without
// errors.
func TestLivePage(t *testing.T) {
	t.Parallel() // waits for its own recorder's first samples
	db := filepath.Join(t.TempDir(), "live.db")
	r := startRecorder(t, db, time.Second)
	// A few samples: three at least, so that each rate has two points to
	// draw a line between (a busy host samples late).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if _, m := r.get("/metrics"); metricValue(m, "memdoctor_record_scrapes_stored_total") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recorder stored fewer than 3 samples in 20 s")
		}
	}
	var first string
	for i := 0; i < 5; i++ {
		resp, err := http.Get("http://" + r.addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET /: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		if i == 0 {
			first = string(b)
		} else if string(b) != first {
			t.Error("a request within the page's period rendered it again")
		}
	}
	if !strings.Contains(first, `http-equiv="refresh" content="30"`) || !strings.Contains(first, `data-live="30"`) {
		t.Error("the live page does not reload itself every 30 s")
	}
	if !strings.Contains(first, `data-chart="memory_categories"`) {
		t.Error("the live page draws no memory chart of the recording")
	}
	code, metrics := r.get("/metrics")
	if code != http.StatusOK || metricValue(metrics, "memdoctor_record_page_renders_total") != 1 {
		t.Errorf("/metrics: %d, page renders %v, want 1 for 5 requests", code, metricValue(metrics, "memdoctor_record_page_renders_total"))
	}
	if code, _ := r.get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	resp, err := http.Post("http://"+r.addr+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405 (read-only)", resp.StatusCode)
	}
	if code, _ := r.get("/anything"); code != http.StatusNotFound {
		t.Errorf("GET /anything: %d, want 404", code)
	}
	b := startBrowser(t)
	browserChecks(t, b.page(t), "http://"+r.addr+"/", "live")
}
