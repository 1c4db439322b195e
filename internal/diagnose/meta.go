package diagnose

// What a rule tells the rest of memdoctor about itself, beyond judging
// data: which charts prove its findings (the HTML report), how a fleet scan
// spots the instances that come near it (the pre-filter), and the
// Prometheus alerting rules that approximate it. Each rule fills these in
// its own file, from its own thresholds; the report, the fleet scan and the
// alert writer only iterate the registry.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Kinds of chart that prove findings (the HTML report draws each kind).
const (
	ChartMemoryCategories = "memory_categories"
	ChartSlabVsCgroups    = "slab_vs_cgroups"
	ChartZoneWatermarks   = "zone_watermarks"
	ChartReclaimRates     = "reclaim_rates"
	ChartCPUSysSoftirq    = "cpu_sys_softirq"
	ChartProcessMemory    = "process_memory"
	ChartAllocatorView    = "allocator_view"
	ChartGCTimeShare      = "gc_time_share"
	ChartGCCollections    = "gc_collections"
	// ChartCgroupMemory draws the memory cgroup a finding's subject names
	// ("cgroup PATH"): its charge against its limits, and its stall share.
	ChartCgroupMemory = "cgroup_memory"
)

// ChartKinds lists every kind of chart a rule may name.
func ChartKinds() []string {
	return []string{ChartMemoryCategories, ChartSlabVsCgroups, ChartZoneWatermarks, ChartReclaimRates,
		ChartCPUSysSoftirq, ChartProcessMemory, ChartAllocatorView, ChartGCTimeShare, ChartGCCollections, ChartCgroupMemory}
}

// PrefilterFactor is how near a rule's threshold a fleet scan's aggregate
// must come for the instance to be a suspect: within a factor of two, so
// that the rules, not the approximations of PromQL, decide.
const PrefilterFactor = 0.5

// Prefilter is how a fleet scan, which reads aggregates of every instance
// at once from Prometheus and fetches the full range of the suspects only,
// tells which instances come near the rule.
type Prefilter struct {
	// About says in a few words what the scan reads (docs/rules.md).
	About string
	// Queries are instant queries, each giving at most one value per
	// instance (aggregated by instance).
	Queries func(a PrefilterArgs) []PromQuery
	// Daily, when set, is an expression of a range selector's window
	// (aggregated by instance), evaluated over each UTC day of the scanned
	// range and over the day so far; Score gets the values as Daily.
	Daily func(match, window string) string
	// Score turns what was read for one instance into the ratio of the
	// aggregate to the rule's threshold (1: at the threshold; 0: nothing).
	Score func(v PrefilterValues) float64
}

// PrefilterArgs are what the queries of a pre-filter depend on.
type PrefilterArgs struct {
	// Match is the label selector every series must match (may be empty).
	Match string
	// Range is the length of the scanned range, Step the resolution of
	// the suspects' full ranges.
	Range, Step time.Duration
}

// Window is the range as a PromQL duration.
func (a PrefilterArgs) Window() string { return promql.Duration(a.Range) }

// Latest is the window of the latest state, the one the instant rules
// judge: as far back as the latest sample a diagnosis uses (three steps),
// and never longer than the range.
func (a PrefilterArgs) Latest() string {
	return promql.Duration(min(a.Range, max(latestMaxAge(&sample.Window{Step: a.Step}), time.Minute)))
}

// PromQuery is one named PromQL expression.
type PromQuery struct {
	Key, Expr string
}

// PrefilterValues are what a scan read for one instance.
type PrefilterValues struct {
	// Values by query key (a missing value reads as 0).
	Values map[string]float64
	// Daily are the values of the Daily expression, oldest first, the
	// day so far last.
	Daily []float64
	// Total is the instance's MemTotal; Days the scanned range in days.
	Total, Days float64
}

// V returns the value of a query (0 when the instance had none).
func (v PrefilterValues) V(key string) float64 { return v.Values[key] }

// Has says whether a query gave the instance a value.
func (v PrefilterValues) Has(key string) bool {
	_, ok := v.Values[key]
	return ok
}

// lastPercentOfTotal is the latest value of a series over the range against the
// latest MemTotal, in percent, by instance.
func lastPercentOfTotal(series string, a PrefilterArgs) string {
	return byInstance("100 * last_over_time(" + sel(series, a.Match) + "[" + a.Latest() + "]) / last_over_time(" +
		sel("node_memory_MemTotal_bytes", a.Match) + "[" + a.Latest() + "])")
}

// presentPrefilter is the pre-filter of a rule no aggregate approximates:
// every instance that has the series now is a suspect (a score of 1), so
// that the rule judges it.
func presentPrefilter(series string) *Prefilter {
	return &Prefilter{
		About: "every instance with " + series + " (no aggregate approximates the rule)",
		Queries: func(a PrefilterArgs) []PromQuery {
			return []PromQuery{{"present", "count by (instance) (last_over_time(" + sel(series, a.Match) + "[" + a.Latest() + "]))"}}
		},
		Score: func(v PrefilterValues) float64 {
			if v.Has("present") {
				return 1
			}
			return 0
		},
	}
}

// Alert is one Prometheus alerting rule approximating a rule.
type Alert struct {
	Name     string
	Expr     string
	For      string
	Severity string
	// Summary may use {{ $labels.NAME }}.
	Summary string
	// Runbook is what to run when the alert fires ("": diagnose the
	// instance from Prometheus).
	Runbook string
}

// AlertOptions are what the alerting rules depend on.
type AlertOptions struct {
	// Match is a label selector added to every series (may be empty).
	Match string
	// StaticBaselines: per-host memory baselines are given as the
	// recording rule BaselineRecord instead of a subquery.
	StaticBaselines bool
}

// BaselineRecord is the recording rule that holds a host's static memory
// baseline (memdoctor alerts --baseline-from).
const BaselineRecord = "memdoctor:memory_used_baseline_bytes"

// promNum writes a threshold for PromQL.
func promNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// sel is promql.Selector.
func sel(name, match string, extra ...string) string { return promql.Selector(name, match, extra...) }

// dailyFloorGrowth is the growth per day of a series' daily floor over the
// last three days: what the trend rules judge (a count that drops back
// every night has no rising floor), unaffected by a reboot before the last
// three days.
func dailyFloorGrowth(s string) string {
	return fmt.Sprintf("(min_over_time(%s[1d]) - min_over_time(%s[1d] offset 3d)) / 3", s, s)
}

// byInstance is the largest value per instance.
func byInstance(e string) string { return "max by (instance) (" + e + ")" }

// Lookup returns the registered rule with an id.
func Lookup(id string) (Rule, bool) {
	for _, r := range registry {
		if r.Meta().ID == id {
			return r, true
		}
	}
	return nil, false
}

// DailyMinAvailable is the lowest available memory over window, by
// instance: over a day, the day's peak of use.
func DailyMinAvailable(match, window string) string {
	return "min by (instance) (min_over_time(" + sel("node_memory_MemAvailable_bytes", match) + "[" + window + "]))"
}
