package html

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/seriestest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func fixture(t testing.TB) *sample.Window {
	t.Helper()
	b, err := os.ReadFile("testdata/host.series")
	if err != nil {
		t.Fatal(err)
	}
	w, err := seriestest.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// fixtureFindings are one finding per entry of the rule-to-chart mapping
// (the runtime rules' ids from the shared contract included), with the
// subjects the rules write.
func fixtureFindings() []model.Finding {
	mk := func(id string, sev model.Severity, subject string) model.Finding {
		return model.Finding{ID: id, Severity: sev, Subject: subject, Summary: "summary of " + id,
			Evidence: []model.Evidence{{Name: "some_bytes", Value: 123456789, Unit: "bytes"}, {Name: "kernel", Text: "5.0"}},
			Remedies: []model.Remedy{{Title: "do this", Commands: []string{"sysctl -w vm.x=1", "echo 1 > /proc/sys/vm/drop_caches"}, Risk: "little"}}}
	}
	return []model.Finding{
		mk("available_memory_decline", model.Warning, "web1 host"),
		mk("low_available_memory", model.Critical, "host"),
		mk("memory_baseline_exceeded", model.Warning, "web1 host"),
		mk("dying_cgroups", model.Critical, "web1 host"),
		mk("slab_unreclaimable_growth", model.Warning, "web1 host"),
		mk("slab_unreclaimable_high", model.Info, "host"),
		mk("watermark_thrash", model.Warning, "web1 host"),
		mk("watermark_gap_small", model.Warning, "zone Normal"),
		mk("process_memory_growth", model.Warning, "web1 process leaky (pid 10)"),
		mk("process_leak", model.Warning, "web1 process leaky (pid 10)"),
		mk("allocator_hoarding", model.Warning, "process leaky (pid 10)"),
		mk("malloc_arenas_many", model.Warning, "process leaky (pid 10)"),
		mk("gc_time_high", model.Warning, "jvm java (pid 20)"),
		mk("gc_old_generation_churn", model.Info, "jvm java (pid 20)"),
		mk("glibc_version_changed", model.Info, "web1 host"),
		mk("cgroup_memory_pressure", model.Warning, "cgroup /system.slice/worker.service"),
	}
}

func fixturePage(t testing.TB) (*Page, *sample.Window) {
	w := fixture(t)
	rep := &model.Report{Findings: fixtureFindings(), Notes: []sample.Note{
		{Source: "rule process_memory_growth", Message: "too little data for pid 11", Fix: "record longer"},
	}}
	return &Page{Source: "testdata/host.series", Generated: time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC),
		Instances: []Instance{{Name: w.Instance, From: w.From, To: w.To, Step: 0, Series: len(w.Series), Report: rep, Window: w}}}, w
}

func renderPage(t testing.TB, p *Page) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Every rule has charts that prove it, or is known to be about a single
// state; every mapped chart kind exists; the runtime rules of the shared
// contract get the GC charts.
func TestRuleChartMapping(t *testing.T) {
	t.Parallel()
	stateOnly := map[string]bool{"glibc_version_changed": true}
	for _, r := range diagnose.Rules() {
		id := r.Meta().ID
		got := ChartIDs(id)
		if len(got) == 0 && !stateOnly[id] {
			t.Errorf("rule %s has no chart", id)
		}
		for _, c := range got {
			if chartKinds[c] == nil {
				t.Errorf("rule %s maps to unknown chart %q", id, c)
			}
		}
	}
	for _, id := range []string{"gc_time_high", "gc_old_generation_churn", "gc_induced", "gc_heap_slack"} {
		if got := ChartIDs(id); !slices.Equal(got, []string{"gc_time_share", "gc_collections"}) {
			t.Errorf("%s charts %v, want the GC charts", id, got)
		}
	}
	if got := ChartIDs("process_leak"); got[0] != "allocator_view" {
		t.Errorf("process_leak charts %v: its own, the allocator's view first", got)
	}
	if got := ChartIDs("no_such_rule"); got != nil {
		t.Errorf("an unknown rule gets charts %v", got)
	}
	// Every kind of chart a rule may name has a builder, and no builder
	// is out of reach.
	kinds := diagnose.ChartKinds()
	for _, k := range kinds {
		if chartKinds[k] == nil {
			t.Errorf("chart kind %s has no builder", k)
		}
	}
	if len(chartKinds) != len(kinds) {
		t.Errorf("%d builders for %d kinds of chart", len(chartKinds), len(kinds))
	}
	names := SeriesNames()
	for _, s := range fixture(t).Series {
		if !slices.Contains(names, s.Name) && !strings.HasPrefix(s.Name, "node_cpu") {
			t.Errorf("the fixture's %s is charted but not in SeriesNames (a source would not load it)", s.Name)
		}
	}
}

// wantCharts is what each finding of the fixture must show.
var wantCharts = map[string][]string{
	"available_memory_decline":  {"memory_categories"},
	"low_available_memory":      {"memory_categories"},
	"memory_baseline_exceeded":  {"memory_categories"},
	"dying_cgroups":             {"slab_vs_cgroups"},
	"slab_unreclaimable_growth": {"slab_vs_cgroups", "memory_categories"},
	"slab_unreclaimable_high":   {"slab_vs_cgroups", "memory_categories"},
	// The DMA zone has no managed pages: only Normal is drawn.
	"watermark_thrash":        {"zone_watermarks", "reclaim_rates", "cpu_sys_softirq"},
	"watermark_gap_small":     {"zone_watermarks", "reclaim_rates", "cpu_sys_softirq"},
	"process_memory_growth":   {"process_memory", "allocator_view"},
	"process_leak":            {"allocator_view", "process_memory"},
	"allocator_hoarding":      {"allocator_view", "process_memory"},
	"malloc_arenas_many":      {"process_memory", "allocator_view"},
	"gc_time_high":            {"gc_time_share", "gc_collections"},
	"gc_old_generation_churn": {"gc_time_share", "gc_collections"},
	"glibc_version_changed":   nil,
	// The finding's own cgroup only (not other.service): its memory
	// against its limits, and its stall share.
	"cgroup_memory_pressure": {"cgroup_memory", "cgroup_memory", "reclaim_rates"},
}

// Each finding shows its charts, and each chart shows exactly the series it
// claims, checked against the data: buckets, extent, time span, vertices
// and legend.
func TestChartsShowTheirSeries(t *testing.T) {
	t.Parallel()
	p, w := fixturePage(t)
	doc := parseHTML(t, renderPage(t, p))
	arts := doc.all(func(n *node) bool { return n.tag == "article" && n.hasClass("finding") })
	if len(arts) != len(wantCharts) {
		t.Fatalf("%d findings rendered, want %d", len(arts), len(wantCharts))
	}
	lastRank := 99
	for _, a := range arts {
		id := a.attr["data-rule"]
		rank := model.Severity(a.attr["data-severity"]).Rank()
		if rank > lastRank {
			t.Errorf("finding %s (%s) after a less severe one: not ordered by severity", id, a.attr["data-severity"])
		}
		lastRank = rank
		var got []string
		for _, fig := range chartsIn(t, doc, a) {
			got = append(got, fig.attr["data-chart"])
			checkChart(t, w, fig)
		}
		if !slices.Equal(got, wantCharts[id]) {
			t.Errorf("finding %s shows charts %v, want %v", id, got, wantCharts[id])
		}
		if wantCharts[id] == nil && len(a.all(func(n *node) bool { return n.hasClass("nocharts") })) != 1 {
			t.Errorf("finding %s without charts does not say why", id)
		}
		if len(a.tagged("pre")) == 0 || !strings.Contains(a.textContent(), "$ sysctl -w vm.x=1") {
			t.Errorf("finding %s: remedy commands not shown", id)
		}
	}
	// The overview draws memory by category and the GC charts.
	var overview []string
	for _, s := range doc.all(func(n *node) bool { return n.attr["id"] == "overview" }) {
		for _, fig := range chartsIn(t, doc, s) {
			overview = append(overview, fig.attr["data-chart"])
			checkChart(t, w, fig)
		}
	}
	if !slices.Equal(overview, []string{"memory_categories", "gc_time_share", "gc_collections"}) {
		t.Errorf("overview charts %v", overview)
	}
}

// chartsIn returns the charts a part of the page shows, in order: drawn
// there, or referred to (a chart drawn earlier), resolved to the drawing.
func chartsIn(t *testing.T, doc, part *node) []*node {
	t.Helper()
	var out []*node
	for _, n := range part.all(func(n *node) bool { return n.attr["data-chart"] != "" }) {
		if n.tag == "figure" {
			out = append(out, n)
			continue
		}
		a := n.tagged("a")
		if len(a) != 1 {
			t.Fatalf("chart reference %s without a link", n.attr["data-chart"])
		}
		id := strings.TrimPrefix(a[0].attr["href"], "#")
		target := doc.all(func(m *node) bool { return m.tag == "figure" && m.attr["id"] == id })
		if len(target) != 1 || target[0].attr["data-chart"] != n.attr["data-chart"] {
			t.Fatalf("chart reference %s points to #%s, which is not that chart", n.attr["data-chart"], id)
		}
		out = append(out, target[0])
	}
	return out
}

// figure returns the first chart of a kind a finding shows.
func figure(t *testing.T, doc *node, rule, chart string) *node {
	t.Helper()
	for _, a := range doc.tagged("article") {
		if a.attr["data-rule"] != rule {
			continue
		}
		for _, f := range chartsIn(t, doc, a) {
			if f.attr["data-chart"] == chart {
				return f
			}
		}
	}
	t.Fatalf("no %s chart in finding %s", chart, rule)
	return nil
}

// Charts shared by several findings are drawn once.
func TestSharedChartsDrawnOnce(t *testing.T) {
	t.Parallel()
	p, _ := fixturePage(t)
	doc := parseHTML(t, renderPage(t, p))
	seen := map[string]bool{}
	for _, f := range doc.tagged("figure") {
		var key strings.Builder
		key.WriteString(f.attr["data-chart"] + f.tagged("figcaption")[0].textContent())
		for _, d := range readDrawn(t, f) {
			key.WriteString("|" + d.expr)
		}
		if seen[key.String()] {
			t.Errorf("chart %s drawn twice", key.String())
		}
		seen[key.String()] = true
	}
	if refs := doc.all(func(n *node) bool { return n.hasClass("chartref") }); len(refs) == 0 {
		t.Error("no chart is shared in the fixture: the test proves nothing")
	}
}

func drawnOf(t *testing.T, fig *node, expr string) drawn {
	t.Helper()
	for _, d := range readDrawn(t, fig) {
		if d.expr == expr {
			return d
		}
	}
	t.Fatalf("chart %s does not draw %s", fig.attr["data-chart"], expr)
	return drawn{}
}

// The charts say what they show in numbers a reader can check by hand.
func TestChartNumbers(t *testing.T) {
	t.Parallel()
	p, _ := fixturePage(t)
	doc := parseHTML(t, renderPage(t, p))
	// The single-sample dip to 150 free pages survives the display buckets.
	free := drawnOf(t, figure(t, doc, "watermark_thrash", "zone_watermarks"), `memdoctor_zoneinfo_free_pages{node="0",zone="Normal"}`)
	if free.min != 150 {
		t.Errorf("free pages drawn down to %g, want the dip to 150", free.min)
	}
	// Two axes: SUnreclaim on the left, dying cgroups on the right.
	slab := figure(t, doc, "dying_cgroups", "slab_vs_cgroups")
	if d := drawnOf(t, slab, "memdoctor_memcg_dying_cgroups"); d.axis != "right" || d.max != 20*960 {
		t.Errorf("dying cgroups on the %s axis up to %g, want right, 19200", d.axis, d.max)
	}
	if d := drawnOf(t, slab, "node_memory_SUnreclaim_bytes"); d.axis != "left" || d.max != 3e8+960e6 {
		t.Errorf("SUnreclaim on the %s axis up to %g", d.axis, d.max)
	}
	// Rates: 10 quick wake-ups per 15 minutes; 3 stalls; CPU 135 s of
	// system time per 900 s over 2 CPUs = 7.5 %.
	reclaim := figure(t, doc, "watermark_thrash", "reclaim_rates")
	if d := drawnOf(t, reclaim, "rate(node_vmstat_kswapd_low_wmark_hit_quickly)"); !near(d.max, 10.0/900) {
		t.Errorf("kswapd rate %g, want %g", d.max, 10.0/900)
	}
	if d := drawnOf(t, reclaim, "sum(rate(node_vmstat_allocstall*))"); !near(d.max, 3.0/900) {
		t.Errorf("stall rate %g, want %g", d.max, 3.0/900)
	}
	cpu := figure(t, doc, "watermark_thrash", "cpu_sys_softirq")
	if d := drawnOf(t, cpu, `sum(rate(node_cpu_seconds_total{mode="system"}))/2`); !near(d.max, 135.0/900/2) {
		t.Errorf("system CPU share %g, want %g", d.max, 135.0/900/2)
	}
	// GC: 90 s of GC per 900 s = 10 %; old collections 3 per 900 s.
	gc := figure(t, doc, "gc_time_high", "gc_time_share")
	if d := drawnOf(t, gc, `rate(memdoctor_runtime_gc_seconds_total{comm="java",pid="20",runtime="jvm",target="pid/20"})`); !near(d.max, 0.1) {
		t.Errorf("GC time share %g, want 0.1", d.max)
	}
	coll := figure(t, doc, "gc_time_high", "gc_collections")
	if d := drawnOf(t, coll, `rate(memdoctor_runtime_gc_collections_total{comm="java",generation="old",pid="20",runtime="jvm",target="pid/20"})`); !near(d.max, 3.0/900) {
		t.Errorf("old collections %g/s, want %g", d.max, 3.0/900)
	}
	// The process charts show the finding's process, not the others.
	for _, d := range readDrawn(t, figure(t, doc, "process_leak", "process_memory")) {
		if !strings.Contains(d.expr, `pid="10"`) {
			t.Errorf("process_leak's chart draws %s, not pid 10", d.expr)
		}
	}
	// The memory categories are stacked: their top is the sum of the parts.
	mem := figure(t, doc, "available_memory_decline", "memory_categories")
	var areas int
	for _, d := range readDrawn(t, mem) {
		if d.area {
			areas++
		}
	}
	if areas != 9 {
		t.Errorf("%d stacked categories, want the 9 of the fixture", areas)
	}
}

// A month of 15 s samples with one spike: the spike is drawn, the path stays
// at most two vertices per bucket.
func TestLongSeriesDownsampled(t *testing.T) {
	t.Parallel()
	const n = 30 * 24 * 60 * 4
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &sample.Series{Name: "node_memory_SUnreclaim_bytes", Points: make([]sample.Point, n)}
	for i := range s.Points {
		s.Points[i] = sample.Point{T: start.Add(time.Duration(i) * 15 * time.Second).UnixMilli(), V: 1e9 + float64(i%100)}
	}
	s.Points[n/3].V = 9e9
	w := &sample.Window{Instance: "h", From: start, To: start.Add(time.Duration(n-1) * 15 * time.Second)}
	w.Add(s)
	p := &Page{Source: "gen", Generated: start, Instances: []Instance{{Name: "h", From: w.From, To: w.To, Window: w,
		Report: &model.Report{Findings: []model.Finding{{ID: "slab_unreclaimable_high", Severity: model.Warning, Subject: "host"}}}}}}
	page := renderPage(t, p)
	doc := parseHTML(t, page)
	fig := figure(t, doc, "slab_unreclaimable_high", "slab_vs_cgroups")
	checkChart(t, w, fig)
	d := drawnOf(t, fig, "node_memory_SUnreclaim_bytes")
	if d.max != 9e9 {
		t.Errorf("spike drawn to %g, want 9e9", d.max)
	}
	if d.points != Buckets(false) || d.vertices > 2*Buckets(false) {
		t.Errorf("%d points, %d vertices for %d buckets", d.points, d.vertices, Buckets(false))
	}
	if len(page) > 100<<10 {
		t.Errorf("a one-chart page is %d bytes", len(page))
	}
}

// Gaps in the data (a process that exited, a stopped recorder) break the
// line instead of drawing across them.
func TestGapsBreakLines(t *testing.T) {
	t.Parallel()
	w, err := seriestest.Parse("interval 15m\nnode_memory_SUnreclaim_bytes 1e9x100 _x200 2e9x100\n")
	if err != nil {
		t.Fatal(err)
	}
	c := Chart{ID: "slab_vs_cgroups", Unit: UnitBytes, Lines: []Line{lineOf(w.Series[0], "SUnreclaim")}}
	v := drawChart(c, w.From.UnixMilli(), w.To.UnixMilli(), "")
	if got := strings.Count(v.Paths[0].D, "M"); got != 2 {
		t.Errorf("%d subpaths, want 2 (one each side of the gap)", got)
	}
}

// Everything that comes from hosts is escaped: a command line, a label
// value, a finding's text.
func TestEscaping(t *testing.T) {
	t.Parallel()
	evil := `<script>alert(1)</script>"'&`
	w, err := seriestest.Parse("interval 15m\nmemdoctor_process_pss_bytes{comm=\"<img src=x onerror=alert(1)>\",pid=\"7\"} 1e9x20\n")
	if err != nil {
		t.Fatal(err)
	}
	f := model.Finding{ID: "process_memory_growth", Severity: model.Warning, Subject: "process " + evil + " (pid 7)", Summary: evil,
		Evidence: []model.Evidence{{Name: evil, Text: evil}},
		Remedies: []model.Remedy{{Title: evil, Commands: []string{"kill " + evil}, Risk: evil, Undo: evil}}}
	p := &Page{Source: evil, Instances: []Instance{{Name: evil, From: w.From, To: w.To, Window: w,
		Report: &model.Report{Findings: []model.Finding{f}, Notes: []sample.Note{{Source: evil, Message: evil, Fix: evil}}}}}}
	page := string(renderPage(t, p))
	for _, bad := range []string{"<script", "<img", "onerror=alert"} {
		if i := strings.Index(page, bad); i >= 0 && !strings.Contains(page[max(0, i-40):i], "&lt;") {
			t.Errorf("unescaped %q in the page: …%s…", bad, page[max(0, i-60):min(len(page), i+60)])
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Error("host text became markup")
	}
	doc := parseHTML(t, []byte(page))
	if !strings.Contains(doc.textContent(), "$ kill "+evil) {
		t.Error("the command does not read back as written")
	}
}

// A snapshot without history and without findings still makes a page that
// says so.
func TestEmptyPage(t *testing.T) {
	t.Parallel()
	p := &Page{Source: "capture.txtar", Instances: []Instance{{Name: "vm", Report: &model.Report{}}}}
	doc := parseHTML(t, renderPage(t, p))
	txt := doc.textContent()
	for _, want := range []string{"No problems found by", "No memory series over time", "Nothing to note"} {
		if !strings.Contains(txt, want) {
			t.Errorf("page does not say %q", want)
		}
	}
	if len(doc.tagged("figure")) != 0 {
		t.Error("charts without data")
	}
}

// skeleton is the page's structure without the numbers: one line per
// element with its identifying attributes.
func skeleton(n *node, depth int, b *strings.Builder) {
	if n.tag != "#root" {
		var attrs []string
		for _, k := range []string{"id", "href", "class", "data-rule", "data-severity", "data-chart", "data-series", "data-axis", "data-unit", "data-right-unit", "data-instance", "data-live"} {
			if v, ok := n.attr[k]; ok {
				attrs = append(attrs, k+"="+strconv.Quote(v))
			}
		}
		if n.tag == "path" {
			attrs = append(attrs, "data-points="+n.attr["data-points"])
		}
		sort.Strings(attrs)
		fmt.Fprintf(b, "%s%s %s\n", strings.Repeat("  ", depth), n.tag, strings.Join(attrs, " "))
	}
	for _, k := range n.kids {
		if k.tag == "line" || k.tag == "text" || k.tag == "style" {
			continue
		}
		skeleton(k, depth+1, b)
	}
}

// A single snapshot (a capture) has findings but no history: no chart, and
// the page says why.
func TestSnapshotHasNoCharts(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	at := w.To
	p := &Page{Source: "capture.txtar", Instances: []Instance{{Name: "vm", From: at, To: at, Window: w,
		Report: &model.Report{Findings: fixtureFindings()[:2]}}}}
	doc := parseHTML(t, renderPage(t, p))
	if n := len(doc.tagged("figure")); n != 0 {
		t.Errorf("%d charts of a single instant", n)
	}
	if !strings.Contains(doc.textContent(), "single snapshot: there is no history to chart") {
		t.Error("the page does not say why there is no chart")
	}
}

// The structure of the fixture's page is fixed by a golden file (go test
// -run Golden -update rewrites it after a deliberate change).
func TestGoldenStructure(t *testing.T) {
	t.Parallel()
	p, _ := fixturePage(t)
	var b strings.Builder
	skeleton(parseHTML(t, renderPage(t, p)), -1, &b)
	golden := filepath.Join("testdata", "host.skeleton")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/render/html -run Golden -update to create it)", err)
	}
	if b.String() != string(want) {
		gl, wl := strings.Split(b.String(), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < min(len(gl), len(wl)); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("structure differs from %s at line %d:\n got: %s\nwant: %s\n(go test ./internal/render/html -run Golden -update after a deliberate change)", golden, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("structure differs from %s in length: %d lines, want %d", golden, len(gl), len(wl))
	}
}

func BenchmarkRender(b *testing.B) {
	p, _ := fixturePage(b)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := Render(&buf, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/page")
}

// A report whose rules did not all run, on data partly unread, says so at
// the top of its findings instead of "no problems found by N rules".
func TestPageSaysCoverage(t *testing.T) {
	t.Parallel()
	n := len(diagnose.Rules())
	rep := &model.Report{Coverage: model.Coverage{Rules: n, Evaluated: []string{"low_available_memory"},
		Partial: true, Unread: []string{"proc/slabinfo: slab caches unreadable: permission denied (root only)"}}}
	for _, r := range diagnose.Rules() {
		if id := r.Meta().ID; id != "low_available_memory" {
			rep.Coverage.NotEvaluated = append(rep.Coverage.NotEvaluated, model.RuleSkip{ID: id, Reason: model.SkipMissingData})
		}
	}
	p := &Page{Source: "capture.txtar", Instances: []Instance{{Name: "vm", Report: rep}}}
	txt := parseHTML(t, renderPage(t, p)).textContent()
	for _, want := range []string{"Partial view", "proc/slabinfo: slab caches unreadable", fmt.Sprintf("Rules evaluated: 1 of %d", n),
		fmt.Sprintf("No problems found by the 1 of %d rules evaluated, on a partial view", n), "gc_time_high (missing data)"} {
		if !strings.Contains(txt, want) {
			t.Errorf("page does not say %q:\n%s", want, txt)
		}
	}
	if strings.Contains(txt, fmt.Sprintf("No problems found by %d rules", n)) {
		t.Error("page claims every rule found nothing")
	}
}

// Evidence on the page is in its units, never Go's raw float text.
func TestPageEvidenceFormatted(t *testing.T) {
	t.Parallel()
	f := model.Finding{ID: "available_memory_decline", Severity: model.Warning, Subject: "host", Summary: "s",
		Evidence: []model.Evidence{{Name: "days_until_exhausted", Value: 71.80891927083333, Unit: "days"}, {Name: "heap_live", Value: 1.00663296e+08}}}
	p := &Page{Source: "x", Instances: []Instance{{Name: "vm", Report: &model.Report{Findings: []model.Finding{f}}}}}
	txt := parseHTML(t, renderPage(t, p)).textContent()
	for _, want := range []string{"71.8 days", "100663296"} {
		if !strings.Contains(txt, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(txt, "71.808") || strings.Contains(txt, "e+08") {
		t.Error("page shows raw numbers")
	}
}

// A cgroup finding charts its own cgroup, named by its subject: another
// cgroup's series never, and no stall chart for a cgroup without one.
func TestCgroupChartIsTheFindingsCgroup(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	for _, c := range []struct {
		cgroup string
		charts int
	}{{"/system.slice/worker.service", 2}, {"/system.slice/other.service", 1}, {"/system.slice/none.service", 0}} {
		f := model.Finding{ID: "cgroup_near_limit", Subject: "cgroup " + c.cgroup}
		got := cgroupMemory(w, &f)
		if len(got) != c.charts {
			t.Errorf("%s: %d cgroup charts, want %d", c.cgroup, len(got), c.charts)
		}
		for _, ch := range got {
			for _, l := range ch.Lines {
				if !strings.Contains(l.Expr, `cgroup="`+c.cgroup+`"`) {
					t.Errorf("%s: chart %q draws %s", c.cgroup, ch.Title, l.Expr)
				}
			}
		}
	}
	if got := cgroupMemory(w, &model.Finding{ID: "low_available_memory", Subject: "host"}); got != nil {
		t.Errorf("a host finding gets cgroup charts: %v", got)
	}
}
