package html

// The chart builders: a rule names in its Meta the kinds of chart that
// prove its findings; a builder reads a window (at display resolution) and
// the finding, and returns concrete charts whose lines carry the expression
// they plot.

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Units of a chart axis.
const (
	UnitBytes     = "bytes"
	UnitPages     = "pages"
	UnitCount     = "count"
	UnitPerSecond = "per_second"
	UnitRatio     = "ratio"
)

// Chart is one chart: lines on a left axis and optionally a right axis,
// over the window's time range.
type Chart struct {
	// ID names the kind of chart (memory_categories, slab_vs_cgroups, ...).
	ID    string
	Title string
	// Unit of the left axis; RightUnit of the right one ("" for none).
	Unit, RightUnit string
	// Stacked draws the left-axis lines as stacked areas (their means per
	// display bucket), in order from the bottom.
	Stacked bool
	Lines   []Line
}

// Line is one plotted series.
type Line struct {
	// Expr names what is plotted, as a PromQL-like expression over the
	// recorded series: a series key (name{labels}), rate(key), or
	// sum(rate(name{labels})) for a sum over every matching series.
	Expr  string
	Label string
	Right bool
	// Dashed marks thresholds (watermarks) drawn beside the measured value.
	Dashed bool
	// Class overrides the colour class (free memory is drawn pale).
	Class string
	// Points, with per-point Min, Max and Mean when the points are step
	// aggregates (nil for raw points).
	Points []sample.Point
	Min    []float64
	Max    []float64
	Mean   []float64
}

// chartFunc builds the charts of one kind for a finding (nil for the
// overview) from a window; it returns none when the window lacks the data.
type chartFunc func(w *sample.Window, f *model.Finding) []Chart

// chartKinds are the builders by kind of chart (the diagnose.Chart*
// constants rules name in their Meta).
var chartKinds = map[string]chartFunc{
	diagnose.ChartMemoryCategories: memoryCategories,
	diagnose.ChartSlabVsCgroups:    slabVsCgroups,
	diagnose.ChartZoneWatermarks:   zoneWatermarks,
	diagnose.ChartReclaimRates:     reclaimRates,
	diagnose.ChartCPUSysSoftirq:    cpuSysSoftirq,
	diagnose.ChartProcessMemory:    processMemory,
	diagnose.ChartAllocatorView:    allocatorView,
	diagnose.ChartGCTimeShare:      gcTimeShare,
	diagnose.ChartGCCollections:    gcCollections,
	diagnose.ChartCgroupMemory:     cgroupMemory,
}

// ChartIDs lists the kinds of chart a rule's findings get: what the rule
// says in its Meta.
func ChartIDs(rule string) []string {
	if r, ok := diagnose.Lookup(rule); ok {
		return r.Meta().Charts
	}
	return nil
}

// ChartsFor builds the charts proving a finding from a window.
func ChartsFor(w *sample.Window, f *model.Finding) []Chart {
	if w == nil {
		return nil
	}
	var out []Chart
	for _, id := range ChartIDs(f.ID) {
		out = append(out, chartKinds[id](w, f)...)
	}
	return out
}

// Overview builds the charts shown for an instance whatever was found:
// memory by category, and the garbage collectors when runtimes were read.
func Overview(w *sample.Window) []Chart {
	if w == nil {
		return nil
	}
	out := memoryCategories(w, nil)
	out = append(out, gcTimeShare(w, nil)...)
	return append(out, gcCollections(w, nil)...)
}

// SeriesNames lists every series name a chart reads, for a source to load.
func SeriesNames() []string {
	names := []string{"node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes", "node_memory_SUnreclaim_bytes",
		"memdoctor_memcg_live_cgroups", "memdoctor_memcg_dying_cgroups", "node_cgroups_cgroups",
		"memdoctor_zoneinfo_free_pages", "node_zoneinfo_nr_free_pages", "node_zoneinfo_min_pages", "node_zoneinfo_low_pages",
		"node_zoneinfo_high_pages", "node_zoneinfo_managed_pages",
		"node_vmstat_kswapd_low_wmark_hit_quickly", "node_vmstat_kswapd_high_wmark_hit_quickly", "node_vmstat_pgscan_direct",
		"node_cpu_seconds_total",
		"memdoctor_process_uss_bytes", "memdoctor_process_pss_bytes", "memdoctor_process_rss_bytes",
		"memdoctor_malloc_system_bytes", "memdoctor_malloc_in_use_bytes", "memdoctor_malloc_free_bytes", "memdoctor_malloc_retained_bytes",
		gcSeconds, gcCollectionsTotal}
	for _, c := range cgroupLines {
		names = append(names, c.series)
	}
	names = append(names, cgroupPressure)
	for _, c := range categories {
		names = append(names, c.series)
	}
	names = append(names, allocstall...)
	seen := map[string]bool{}
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// categories are non-overlapping /proc/meminfo parts, stacked from the
// bottom: what processes and the kernel hold, then the caches, then free.
var categories = []struct{ label, series string }{
	{"anon", "node_memory_AnonPages_bytes"},
	{"unreclaimable slab", "node_memory_SUnreclaim_bytes"},
	{"kernel stacks", "node_memory_KernelStack_bytes"},
	{"page tables", "node_memory_PageTables_bytes"},
	{"per-cpu", "node_memory_Percpu_bytes"},
	{"hugetlb", "node_memory_Hugetlb_bytes"},
	{"page cache + shmem", "node_memory_Cached_bytes"},
	{"buffers", "node_memory_Buffers_bytes"},
	{"reclaimable slab", "node_memory_SReclaimable_bytes"},
	{"free", "node_memory_MemFree_bytes"},
}

// cgroupLines are what the cgroup chart draws of one cgroup: its charge,
// then its limits (dashed).
var cgroupLines = []struct {
	label, series string
	limit         bool
}{
	{"usage", "memdoctor_cgroup_memory_usage_bytes", false},
	{"working set", "memdoctor_cgroup_memory_working_set_bytes", false},
	{"anon", "memdoctor_cgroup_memory_anon_bytes", false},
	{"page cache", "memdoctor_cgroup_memory_file_bytes", false},
	{"memory.max", "memdoctor_cgroup_memory_limit_bytes", true},
	{"memory.high", "memdoctor_cgroup_memory_high_bytes", true},
	{"memory.low", "memdoctor_cgroup_memory_low_bytes", true},
}

// cgroupPressure is the cgroup's stall counter (v2 memory.pressure).
const cgroupPressure = "memdoctor_cgroup_memory_pressure_seconds_total"

// cgroupMemory draws the cgroup a finding is about ("cgroup PATH"): its
// usage, working set, anon and page cache against its limits, and the
// share of time its tasks stalled on memory (some, full).
func cgroupMemory(w *sample.Window, f *model.Finding) []Chart {
	if f == nil || !strings.HasPrefix(f.Subject, "cgroup ") {
		return nil
	}
	p := strings.TrimPrefix(f.Subject, "cgroup ")
	c := Chart{ID: diagnose.ChartCgroupMemory, Title: "Memory of cgroup " + p + " against its limits", Unit: UnitBytes}
	for _, l := range cgroupLines {
		if s := w.Get(l.series, "cgroup", p); s != nil {
			ln := lineOf(s, l.label)
			ln.Dashed = l.limit
			c.Lines = append(c.Lines, ln)
		}
	}
	var out []Chart
	if len(c.Lines) > 0 {
		out = append(out, c)
	}
	ps := Chart{ID: diagnose.ChartCgroupMemory, Title: "Share of time the tasks of cgroup " + p + " stalled on memory", Unit: UnitRatio}
	for _, kind := range []string{"some", "full"} {
		if s := w.Get(cgroupPressure, "cgroup", p, "kind", kind); s != nil {
			ps.Lines = append(ps.Lines, rateLine(s, kind))
		}
	}
	if len(ps.Lines) > 0 {
		out = append(out, ps)
	}
	return out
}

// allocstall are the direct-reclaim stall counters (watermark_thrash's).
var allocstall = model.AllocstallSeries()

const (
	gcSeconds          = "memdoctor_runtime_gc_seconds_total"
	gcCollectionsTotal = "memdoctor_runtime_gc_collections_total"
	// maxLines bounds the per-process or per-target lines of one chart.
	maxLines = 8
)

func lineOf(s *sample.Series, label string) Line {
	return Line{Expr: s.Key(), Label: label, Points: s.Points, Min: s.Min, Max: s.Max, Mean: s.Mean}
}

func memoryCategories(w *sample.Window, _ *model.Finding) []Chart {
	c := Chart{ID: diagnose.ChartMemoryCategories, Title: "Memory by category (stacked) with total and available", Unit: UnitBytes, Stacked: true}
	for _, cat := range categories {
		if s := w.Get(cat.series); s != nil && len(s.Points) > 0 {
			l := lineOf(s, cat.label)
			if cat.label == "free" {
				l.Class = "cfree"
			}
			c.Lines = append(c.Lines, l)
		}
	}
	if len(c.Lines) == 0 {
		return nil
	}
	c.Stacked = true
	for _, extra := range []struct{ series, label, class string }{
		{"node_memory_MemTotal_bytes", "total", "ctotal"}, {"node_memory_MemAvailable_bytes", "available", "cavail"},
	} {
		if s := w.Get(extra.series); s != nil && len(s.Points) > 0 {
			l := lineOf(s, extra.label)
			l.Dashed, l.Class = true, extra.class
			c.Lines = append(c.Lines, l)
		}
	}
	return []Chart{c}
}

func slabVsCgroups(w *sample.Window, _ *model.Finding) []Chart {
	c := Chart{ID: diagnose.ChartSlabVsCgroups, Title: "Unreclaimable slab against memory cgroups", Unit: UnitBytes, RightUnit: UnitCount}
	if s := w.Get("node_memory_SUnreclaim_bytes"); s != nil {
		c.Lines = append(c.Lines, lineOf(s, "SUnreclaim"))
	}
	right := 0
	for _, r := range []struct{ series, label string }{
		{"memdoctor_memcg_dying_cgroups", "dying memory cgroups"}, {"memdoctor_memcg_live_cgroups", "live memory cgroups"},
	} {
		if s := w.Get(r.series); s != nil {
			l := lineOf(s, r.label)
			l.Right = true
			c.Lines = append(c.Lines, l)
			right++
		}
	}
	if right == 0 {
		// v1 hosts without memdoctor's own count: /proc/cgroups' memory line
		// (live and dying together).
		if s := w.Get("node_cgroups_cgroups", "subsys_name", "memory"); s != nil {
			l := lineOf(s, "memory cgroups (/proc/cgroups)")
			l.Right = true
			c.Lines = append(c.Lines, l)
			right++
		}
	}
	if len(c.Lines) == 0 {
		return nil
	}
	if right == 0 {
		c.RightUnit = ""
	}
	return []Chart{c}
}

// zoneWatermarks draws, per zone with managed pages, free pages against the
// zone's min, low and high watermarks.
func zoneWatermarks(w *sample.Window, f *model.Finding) []Chart {
	free := w.Select("memdoctor_zoneinfo_free_pages")
	if len(free) == 0 {
		free = w.Select("node_zoneinfo_nr_free_pages")
	}
	want := ""
	if f != nil && strings.HasPrefix(f.Subject, "zone ") {
		want = strings.TrimPrefix(f.Subject, "zone ")
	}
	var out []Chart
	for _, s := range free {
		node, zone := s.Labels.Get("node"), s.Labels.Get("zone")
		if want != "" && zone != want {
			continue
		}
		if m := w.Get("node_zoneinfo_managed_pages", "node", node, "zone", zone); m != nil {
			if p, ok := m.Last(); ok && p.V == 0 {
				continue
			}
		}
		c := Chart{ID: diagnose.ChartZoneWatermarks, Title: fmt.Sprintf("Free pages against the watermarks, node %s zone %s", node, zone), Unit: UnitPages}
		c.Lines = append(c.Lines, lineOf(s, "free"))
		for _, wm := range []string{"min", "low", "high"} {
			if ws := w.Get("node_zoneinfo_"+wm+"_pages", "node", node, "zone", zone); ws != nil {
				l := lineOf(ws, wm)
				l.Dashed = true
				c.Lines = append(c.Lines, l)
			}
		}
		out = append(out, c)
	}
	return out
}

func reclaimRates(w *sample.Window, _ *model.Finding) []Chart {
	c := Chart{ID: diagnose.ChartReclaimRates, Title: "Reclaim: quick kswapd wake-ups and direct-reclaim stalls per second", Unit: UnitPerSecond}
	if s := w.Get("node_vmstat_kswapd_low_wmark_hit_quickly"); s != nil {
		c.Lines = append(c.Lines, rateLine(s, "kswapd woken quickly"))
	}
	var stalls []*sample.Series
	for _, n := range allocstall {
		if s := w.Get(n); s != nil {
			stalls = append(stalls, s)
		}
	}
	if l, ok := sumRate(stalls, "sum(rate(node_vmstat_allocstall*))", "direct-reclaim stalls"); ok {
		c.Lines = append(c.Lines, l)
	}
	if s := w.Get("node_vmstat_pgscan_direct"); s != nil {
		l := rateLine(s, "pages scanned directly")
		l.Right = true
		c.RightUnit = UnitPerSecond
		c.Lines = append(c.Lines, l)
	}
	if len(c.Lines) == 0 {
		return nil
	}
	return []Chart{c}
}

// cpuSysSoftirq draws the share of all CPUs' time spent in system and
// softirq mode.
func cpuSysSoftirq(w *sample.Window, _ *model.Finding) []Chart {
	all := w.Select("node_cpu_seconds_total")
	if len(all) == 0 {
		return nil
	}
	cpus := map[string]bool{}
	for _, s := range all {
		cpus[s.Labels.Get("cpu")] = true
	}
	c := Chart{ID: diagnose.ChartCPUSysSoftirq, Title: "CPU share in system and softirq mode (all CPUs)", Unit: UnitRatio}
	for _, mode := range []string{"system", "softirq"} {
		l, ok := sumRate(w.Select("node_cpu_seconds_total", "mode", mode),
			fmt.Sprintf(`sum(rate(node_cpu_seconds_total{mode=%q}))/%d`, mode, len(cpus)), mode)
		if !ok {
			continue
		}
		scale(&l, 1/float64(len(cpus)))
		c.Lines = append(c.Lines, l)
	}
	if len(c.Lines) == 0 {
		return nil
	}
	return []Chart{c}
}

var pidRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(pid (\d+)\)`) })

// findingPID returns the pid a finding's subject names, or "".
func findingPID(f *model.Finding) string {
	if f == nil {
		return ""
	}
	if m := pidRE().FindStringSubmatch(f.Subject); m != nil {
		return m[1]
	}
	return ""
}

// processMemory draws USS and PSS of the finding's process, or of the
// largest processes by their last PSS.
func processMemory(w *sample.Window, f *model.Finding) []Chart {
	pid := findingPID(f)
	var pss []*sample.Series
	if pid != "" {
		pss = w.Select("memdoctor_process_pss_bytes", "pid", pid)
		if len(pss) == 0 && len(w.Select("memdoctor_process_uss_bytes", "pid", pid)) == 0 {
			pss = w.Select("memdoctor_process_rss_bytes", "pid", pid)
		}
	} else {
		pss = largest(w.Select("memdoctor_process_pss_bytes"), maxLines/2)
	}
	c := Chart{ID: diagnose.ChartProcessMemory, Title: "Process memory: USS and PSS", Unit: UnitBytes}
	if pid != "" {
		c.Title = "Process memory of pid " + pid + ": USS, PSS and RSS"
	}
	add := func(s *sample.Series, what string) {
		if s != nil {
			c.Lines = append(c.Lines, lineOf(s, fmt.Sprintf("%s %s (pid %s)", what, s.Labels.Get("comm"), s.Labels.Get("pid"))))
		}
	}
	for _, s := range pss {
		p := s.Labels.Get("pid")
		add(w.Get("memdoctor_process_uss_bytes", "pid", p), "USS")
		if s.Name == "memdoctor_process_pss_bytes" {
			add(s, "PSS")
		}
	}
	if pid != "" {
		if len(c.Lines) == 0 {
			add(w.Get("memdoctor_process_uss_bytes", "pid", pid), "USS")
		}
		add(w.Get("memdoctor_process_rss_bytes", "pid", pid), "RSS")
	}
	if len(c.Lines) == 0 {
		return nil
	}
	return []Chart{c}
}

// allocatorView draws what the allocator holds from the system against
// what is in use (and the retained free heap, when measured).
func allocatorView(w *sample.Window, f *model.Finding) []Chart {
	pid := findingPID(f)
	var pids []string
	if pid != "" {
		pids = []string{pid}
	} else {
		for _, s := range largest(w.Select("memdoctor_malloc_system_bytes"), 3) {
			pids = append(pids, s.Labels.Get("pid"))
		}
	}
	var out []Chart
	for _, p := range pids {
		c := Chart{ID: diagnose.ChartAllocatorView, Title: "Allocator of pid " + p + ": held from the system, in use, retained", Unit: UnitBytes}
		for _, r := range []struct{ series, what string }{
			{"memdoctor_malloc_system_bytes", "held from the system"},
			{"memdoctor_malloc_in_use_bytes", "in use"},
			{"memdoctor_malloc_retained_bytes", "retained (free, resident)"},
			{"memdoctor_malloc_free_bytes", "free in the heap"},
		} {
			if s := w.Get(r.series, "pid", p); s != nil {
				c.Lines = append(c.Lines, lineOf(s, r.what))
				if c.Title != "" && s.Labels.Get("comm") != "" {
					c.Title = fmt.Sprintf("Allocator of %s (pid %s): held from the system, in use, retained", s.Labels.Get("comm"), p)
				}
			}
		}
		if len(c.Lines) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// gcTargets picks the GC series of the finding's process (by pid or target
// in the subject), or every target up to maxLines.
func gcTargets(ss []*sample.Series, f *model.Finding) []*sample.Series {
	pid := findingPID(f)
	var out []*sample.Series
	for _, s := range ss {
		switch {
		case pid != "" && s.Labels.Get("pid") == pid,
			pid == "" && f != nil && s.Labels.Get("target") != "" && strings.Contains(f.Subject, s.Labels.Get("target")):
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		out = ss
	}
	if len(out) > maxLines {
		out = out[:maxLines]
	}
	return out
}

func targetLabel(s *sample.Series) string {
	parts := []string{}
	if r := s.Labels.Get("runtime"); r != "" {
		parts = append(parts, r)
	}
	if c := s.Labels.Get("comm"); c != "" {
		parts = append(parts, c)
	}
	if p := s.Labels.Get("pid"); p != "" {
		parts = append(parts, "pid "+p)
	} else if t := s.Labels.Get("target"); t != "" {
		parts = append(parts, t)
	}
	return strings.Join(parts, " ")
}

// gcTimeShare draws the share of wall time each runtime spends in GC.
func gcTimeShare(w *sample.Window, f *model.Finding) []Chart {
	c := Chart{ID: diagnose.ChartGCTimeShare, Title: "Share of time spent in garbage collection", Unit: UnitRatio}
	for _, s := range gcTargets(w.Select(gcSeconds), f) {
		c.Lines = append(c.Lines, rateLine(s, "GC time "+targetLabel(s)))
	}
	if len(c.Lines) == 0 {
		return nil
	}
	return []Chart{c}
}

// gcCollections draws collections per second by generation.
func gcCollections(w *sample.Window, f *model.Finding) []Chart {
	c := Chart{ID: diagnose.ChartGCCollections, Title: "Garbage collections per second by generation", Unit: UnitPerSecond}
	for _, s := range gcTargets(w.Select(gcCollectionsTotal), f) {
		c.Lines = append(c.Lines, rateLine(s, s.Labels.Get("generation")+" "+targetLabel(s)))
	}
	if len(c.Lines) == 0 {
		return nil
	}
	return []Chart{c}
}

// largest returns up to n series with the largest last value.
func largest(ss []*sample.Series, n int) []*sample.Series {
	ss = append([]*sample.Series(nil), ss...)
	last := func(s *sample.Series) float64 {
		p, _ := s.Last()
		return p.V
	}
	sort.SliceStable(ss, func(i, j int) bool { return last(ss[i]) > last(ss[j]) })
	if len(ss) > n {
		ss = ss[:n]
	}
	return ss
}

// rateLine turns a counter into per-second rates between successive points
// (a drop counts from zero: the counter restarted).
func rateLine(s *sample.Series, label string) Line {
	return Line{Expr: "rate(" + s.Key() + ")", Label: label, Points: sample.Rates(s.Points)}
}

// sumRate adds the rates of several counters on the timestamps of the
// first.
func sumRate(ss []*sample.Series, expr, label string) (Line, bool) {
	if len(ss) == 0 {
		return Line{}, false
	}
	sum := sample.Rates(ss[0].Points)
	idx := make(map[int64]int, len(sum))
	for i, p := range sum {
		idx[p.T] = i
	}
	for _, s := range ss[1:] {
		for _, p := range sample.Rates(s.Points) {
			if i, ok := idx[p.T]; ok {
				sum[i].V += p.V
			}
		}
	}
	return Line{Expr: expr, Label: label, Points: sum}, true
}

func scale(l *Line, k float64) {
	for i := range l.Points {
		l.Points[i].V *= k
	}
}
