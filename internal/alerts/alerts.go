// Package alerts writes Prometheus alerting rules for every memdoctor rule
// that PromQL can express, with the thresholds the rules themselves use,
// so that a fleet is watched between diagnoses.
package alerts

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/promql"
)

// Runtime thresholds (the normalized runtime series).
const (
	// GCTimeShare is the share of wall time spent in GC that alerts.
	GCTimeShare = 0.05
)

// Alert is one alerting rule.
type Alert struct {
	Name     string
	Rule     string // memdoctor rule it approximates
	Expr     string
	For      string
	Severity string
	// Summary may use {{ $labels.NAME }}.
	Summary string
}

// Baseline is one host's usual daily peak of memory use.
type Baseline struct {
	Instance string
	Bytes    float64
	Days     int
}

// Options shape the rules.
type Options struct {
	// Match is a label selector added to every series (may be empty).
	Match string
	// Baselines, when given, are static per-host baselines (from
	// --baseline-from) written as recording rules and used instead of the
	// 14-day subquery.
	Baselines []Baseline
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// floorGrowth is the growth per day of a series' daily floor over the last
// three days (a count that drops back daily has no rising floor).
func floorGrowth(s string) string {
	return fmt.Sprintf("(min_over_time(%s[1d]) - min_over_time(%s[1d] offset 3d)) / 3", s, s)
}

// Alerts returns the alerting rules.
func Alerts(o Options) []Alert {
	th := diagnose.Thresholds
	m := o.Match
	cg := promql.Selector("node_cgroups_cgroups", m, `subsys_name="memory"`)
	dying := promql.Selector("memdoctor_memcg_dying_cgroups", m)
	su := promql.Selector("node_memory_SUnreclaim_bytes", m)
	total := promql.Selector("node_memory_MemTotal_bytes", m)
	avail := promql.Selector("node_memory_MemAvailable_bytes", m)
	used := fmt.Sprintf("(%s - %s)", total, avail)
	as := []Alert{
		{Name: "MemdoctorDyingCgroupsGrowing", Rule: "dying_cgroups", For: "1h", Severity: "warning",
			Expr:    fmt.Sprintf("%s >= %s\nor\n%s >= %s", floorGrowth(cg), num(th.DyingCgroupsPerDay), floorGrowth(dying), num(th.DyingCgroupsPerDay)),
			Summary: fmt.Sprintf("memory cgroups on {{ $labels.instance }} pile up: their daily floor grows by %s or more a day (removed cgroups stay pinned)", num(th.DyingCgroupsPerDay))},
		{Name: "MemdoctorSlabUnreclaimableGrowing", Rule: "slab_unreclaimable_growth", For: "1h", Severity: "warning",
			Expr:    fmt.Sprintf("%s\n  > %s * %s\nand\n%s * 3 >= %s", floorGrowth(su), num(th.SlabGrowthShareOfTotalPerDay), total, floorGrowth(su), num(th.SlabMinGrowthBytes)),
			Summary: fmt.Sprintf("unreclaimable slab on {{ $labels.instance }} grows by more than %s%% of its memory a day", num(100*th.SlabGrowthShareOfTotalPerDay))},
		{Name: "MemdoctorWatermarkThrash", Rule: "watermark_thrash", For: "30m", Severity: "warning",
			Expr: fmt.Sprintf("increase(%s[1d]) >= %s\nor\nsum without (memdoctor_counter) (\n%s\n) >= %s",
				promql.Selector("node_vmstat_kswapd_low_wmark_hit_quickly", m), num(th.ThrashHitsPerDay),
				SumIncrease(diagnose.AllocstallSeries(), m, "1d"), num(th.ThrashStallsPerDay)),
			Summary: fmt.Sprintf("reclaim on {{ $labels.instance }} crosses the watermarks: %s or more quick kswapd wake-ups, or %s or more direct-reclaim stalls, in a day",
				num(th.ThrashHitsPerDay), num(th.ThrashStallsPerDay))},
		{Name: "MemdoctorGCTimeHigh", Rule: "gc_time_high", For: "15m", Severity: "warning",
			Expr:    fmt.Sprintf("rate(%s[5m]) > %s", promql.Selector("memdoctor_runtime_gc_seconds_total", m), num(GCTimeShare)),
			Summary: fmt.Sprintf("{{ $labels.runtime }} process {{ $labels.target }} spends more than %s%% of its time in garbage collection", num(100*GCTimeShare))},
		{Name: "MemdoctorInducedGC", Rule: "gc_induced", For: "0m", Severity: "info",
			Expr:    fmt.Sprintf("increase(%s[1h]) > 0", promql.Selector("memdoctor_runtime_gc_induced_total", m)),
			Summary: "{{ $labels.runtime }} process {{ $labels.target }} runs explicitly induced collections ({{ $labels.cause }})"},
	}
	margin := num(th.BaselineMargin)
	if len(o.Baselines) > 0 {
		as = append(as, Alert{Name: "MemdoctorMemoryAboveBaseline", Rule: "memory_baseline_exceeded", For: "15m", Severity: "warning",
			Expr:    fmt.Sprintf("%s\n  > on (instance) group_left %s * memdoctor:memory_used_baseline_bytes", used, margin),
			Summary: fmt.Sprintf("memory use on {{ $labels.instance }} is more than %.0f%% above its usual daily peak", 100*(th.BaselineMargin-1))})
	} else {
		as = append(as, Alert{Name: "MemdoctorMemoryAboveBaseline", Rule: "memory_baseline_exceeded", For: "15m", Severity: "warning",
			Expr:    fmt.Sprintf("%s\n  > %s * quantile_over_time(0.5, max_over_time(%s[1d:5m])[%dd:1d] offset 1d)", used, margin, used, th.BaselineDays),
			Summary: fmt.Sprintf("memory use on {{ $labels.instance }} is more than %.0f%% above the median of its last %d daily peaks", 100*(th.BaselineMargin-1), th.BaselineDays)})
	}
	return as
}

// YAML renders the rule file: the alerts, and the per-host baselines as
// recording rules when given.
func YAML(o Options) string {
	var b strings.Builder
	b.WriteString("# Prometheus alerting rules written by memdoctor alerts.\n")
	b.WriteString("# Thresholds are memdoctor's rules' own; an alert means: run memdoctor diagnose on the host.\n")
	b.WriteString("groups:\n")
	b.WriteString("  - name: memdoctor\n    rules:\n")
	if len(o.Baselines) > 0 {
		// In the alerts' group, first: rules of a group run in order, so
		// the alert always sees the baselines of the same evaluation.
		bs := append([]Baseline(nil), o.Baselines...)
		sort.Slice(bs, func(i, j int) bool { return bs[i].Instance < bs[j].Instance })
		for _, x := range bs {
			fmt.Fprintf(&b, "      - record: memdoctor:memory_used_baseline_bytes\n        expr: vector(%s)\n        labels:\n          instance: %s\n          memdoctor_baseline_days: %q\n",
				num(x.Bytes), quote(x.Instance), strconv.Itoa(x.Days))
		}
	}
	for _, a := range Alerts(o) {
		fmt.Fprintf(&b, "      - alert: %s\n        expr: |\n", a.Name)
		for _, l := range strings.Split(a.Expr, "\n") {
			fmt.Fprintf(&b, "          %s\n", l)
		}
		fmt.Fprintf(&b, "        for: %s\n        labels:\n          severity: %s\n          memdoctor_rule: %s\n", a.For, a.Severity, a.Rule)
		fmt.Fprintf(&b, "        annotations:\n          summary: %s\n          runbook: %s\n", quote(a.Summary), quote(Runbook(a)))
	}
	return b.String()
}

// Runbook is the command the alert's runbook annotation gives.
func Runbook(a Alert) string {
	if a.Rule == "gc_time_high" || a.Rule == "gc_induced" {
		return "memdoctor check on the host; see the " + a.Rule + " finding"
	}
	return "memdoctor diagnose --prometheus URL --match '{instance=\"{{ $labels.instance }}\"}'; see the " + a.Rule + " finding"
}

// quote writes a YAML double-quoted string.
func quote(s string) string { return strconv.Quote(s) }

// SumIncrease is the increase of each named counter over window, each kept
// apart by a memdoctor_counter label (increase drops the metric name, and
// series that then share labels cannot be summed), ready for
// sum without (memdoctor_counter).
func SumIncrease(names []string, match, window string) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf(`  label_replace(increase(%s[%s]), "memdoctor_counter", %q, "", "")`, promql.Selector(n, match), window, n))
	}
	return strings.Join(parts, "\nor\n")
}
