// Package compare turns an experiment into a verdict: two groups of hosts
// (label selectors over Prometheus, two recordings, or two time windows
// of one), a few memory metrics per host, the difference of the groups'
// medians with a bootstrap 95 % interval, and a plain sentence.
package compare

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/stats"
)

// Metric is one compared quantity.
type Metric struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Unit  string `json:"unit"`
	// Parts: when a group is one recording, this metric's values are
	// equal parts of it (a rate within a recording), not its days.
	Parts bool `json:"-"`
}

// Metrics are what compare measures per host.
var Metrics = []Metric{
	{"slab_unreclaimable_growth_per_day", "unreclaimable slab growth per day", "bytes_per_day", false},
	{"memory_cgroups_growth_per_day", "memory cgroup count growth per day", "per_day", false},
	{"available_memory", "available memory (mean)", "bytes", false},
	{"process_uss", "USS of the recorded processes (mean of their sum)", "bytes", false},
	{"kswapd_low_wmark_hit_quickly", "quick kswapd wake-ups (kswapd_low_wmark_hit_quickly) per day", "per_day", true},
	{"allocstall", "direct-reclaim stalls (allocstall) per day", "per_day", true},
	{"pgscan_direct", "pages scanned by direct reclaim (pgscan_direct) per day", "per_day", true},
}

// RecordingParts is how many equal parts a single recording is cut into
// for the metrics with Parts.
const RecordingParts = 6

// Values are one group's per-unit values of each metric: unit (host, or
// day of a single host) → value.
type Values map[string]map[string]float64

// Row compares one metric.
type Row struct {
	Metric
	A       map[string]float64 `json:"a"`
	B       map[string]float64 `json:"b"`
	MedianA float64            `json:"median_a"`
	MedianB float64            `json:"median_b"`
	// Diff is median(B) − median(A), with its bootstrap 95 % interval.
	Diff float64 `json:"diff"`
	Lo   float64 `json:"ci95_lo"`
	Hi   float64 `json:"ci95_hi"`
	// Interval is false when a group has a single value (Lo and Hi are
	// then 0 and meaningless).
	Interval bool `json:"interval"`
	// Real is true when the interval excludes zero.
	Real    bool   `json:"real"`
	Verdict string `json:"verdict"`
	// Of is what each value of this row is when it differs from the
	// result's Unit ("part": equal parts of one recording).
	Of string `json:"of,omitempty"`
}

// Result is a comparison.
type Result struct {
	Kind string `json:"kind"`
	A    string `json:"a"`
	B    string `json:"b"`
	// Unit is what each value is: "host", or "day" when a group is one
	// host (its days are compared).
	Unit  string   `json:"unit"`
	Rows  []Row    `json:"rows"`
	Notes []string `json:"notes,omitempty"`
}

// BootstrapIterations and Seed make the intervals reproducible.
const (
	BootstrapIterations = 4000
	Seed                = 20200131
)

// Compare builds the rows for the metrics both groups have.
func Compare(nameA, nameB, unit string, a, b Values) *Result {
	r := &Result{Kind: "memdoctor.compare", A: nameA, B: nameB, Unit: unit}
	for g, vs := range map[string]Values{"A": a, "B": b} {
		for _, m := range Metrics {
			for u, v := range vs[m.ID] {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					delete(vs[m.ID], u)
					r.Notes = append(r.Notes, fmt.Sprintf("%s: group %s, %s is %v, left out", m.Title, g, u, v))
				}
			}
		}
	}
	sort.Strings(r.Notes)
	for _, m := range Metrics {
		va, vb := a[m.ID], b[m.ID]
		if len(va) == 0 || len(vb) == 0 {
			if len(va)+len(vb) > 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: only group %s has it", m.Title, map[bool]string{true: "A", false: "B"}[len(va) > 0]))
			}
			continue
		}
		xa, xb := flat(va), flat(vb)
		row := Row{Metric: m, A: va, B: vb, MedianA: stats.Median(xa), MedianB: stats.Median(xb)}
		row.Diff, row.Lo, row.Hi = stats.BootstrapDiff(xb, xa, stats.Median, BootstrapIterations, 0.05, Seed)
		// One value in a group resamples to itself: no interval.
		row.Interval = len(xa) >= 2 && len(xb) >= 2 && !math.IsNaN(row.Lo) && !math.IsNaN(row.Hi)
		if !row.Interval {
			row.Lo, row.Hi = 0, 0
		}
		row.Real = row.Interval && (row.Lo > 0 || row.Hi < 0)
		of := unit
		if m.Parts && unit == "day" {
			of, row.Of = "part", "part"
		}
		row.Verdict = verdict(row, len(xa), len(xb), of)
		r.Rows = append(r.Rows, row)
	}
	return r
}

func flat(m map[string]float64) []float64 {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]float64, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// Format renders a value in its unit.
func Format(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%.3g", v)
	}
	switch unit {
	case "bytes", "bytes_per_day":
		s := format.Bytes(int64(math.Round(v)))
		if unit == "bytes_per_day" {
			s += "/day"
		}
		return s
	case "per_day":
		return fmt.Sprintf("%.0f/day", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func verdict(r Row, na, nb int, unit string) string {
	ci := fmt.Sprintf("95%% CI %s … %s", Format(r.Lo, r.Unit), Format(r.Hi, r.Unit))
	if !r.Interval {
		return fmt.Sprintf("B − A = %s, but with %d and %d %ss there is no interval: compare more hosts, or a host's days (two sources of one host each)",
			Format(r.Diff, r.Unit), na, nb, unit)
	}
	small := ""
	if na < 5 || nb < 5 {
		small = fmt.Sprintf(" (only %d and %d %ss: the interval is optimistic)", na, nb, unit)
	}
	if !r.Real {
		return fmt.Sprintf("no clear difference: B − A = %s, %s includes 0%s", Format(r.Diff, r.Unit), ci, small)
	}
	dir := "higher"
	if r.Diff < 0 {
		dir = "lower"
	}
	return fmt.Sprintf("B is %s: B − A = %s (%s)%s", dir, Format(r.Diff, r.Unit), ci, small)
}

// PromGroups reads both groups' per-host values from Prometheus over
// [end−r, end]. selA and selB are label selectors; a host belongs to a
// group when its node_uname_info or node_memory_MemTotal_bytes matches
// (so kernel release, a target label or the instance itself can select).
func PromGroups(ctx context.Context, c *prom.Client, selA, selB, match string, end time.Time, r time.Duration) (a, b Values, err error) {
	R := fmt.Sprintf("[%ds]", int64(r/time.Second))
	members := func(s string) (map[string]bool, error) {
		expr := "group by (instance) (last_over_time(" + promql.Selector("", match, `__name__=~"node_uname_info|node_memory_MemTotal_bytes"`, promql.Matchers(s)) + R + "))"
		v, err := c.Query(ctx, expr, end)
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, x := range v {
			out[x.Labels["instance"]] = true
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no host matches %s (between %s and %s)", s, end.Add(-r).UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
		}
		return out, nil
	}
	ga, err := members(selA)
	if err != nil {
		return nil, nil, fmt.Errorf("group A: %w", err)
	}
	gb, err := members(selB)
	if err != nil {
		return nil, nil, fmt.Errorf("group B: %w", err)
	}
	for h := range ga {
		if gb[h] {
			return nil, nil, fmt.Errorf("host %s is in both groups: make the selectors disjoint", h)
		}
	}
	qs := map[string]string{
		"slab_unreclaimable_growth_per_day": "max by (instance) (deriv(" + promql.Selector("node_memory_SUnreclaim_bytes", match) + R + ") * 86400)",
		"memory_cgroups_growth_per_day": "max by (instance) (deriv(" + promql.Selector("node_cgroups_cgroups", match, `subsys_name="memory"`) + R + ") * 86400 or deriv(" +
			promql.Selector("memdoctor_memcg_dying_cgroups", match) + R + ") * 86400)",
		"available_memory": "max by (instance) (avg_over_time(" + promql.Selector("node_memory_MemAvailable_bytes", match) + R + "))",
		"process_uss":      "sum by (instance) (avg_over_time(" + promql.Selector("memdoctor_process_uss_bytes", match) + R + "))",
	}
	a, b = Values{}, Values{}
	for _, m := range Metrics {
		if qs[m.ID] == "" {
			continue // measured from recordings only (the reclaim rates of Parts)
		}
		v, err := c.Query(ctx, qs[m.ID], end)
		if err != nil {
			return nil, nil, err
		}
		for _, x := range v {
			h := x.Labels["instance"]
			for _, g := range []struct {
				in  map[string]bool
				out Values
			}{{ga, a}, {gb, b}} {
				if g.in[h] {
					if g.out[m.ID] == nil {
						g.out[m.ID] = map[string]float64{}
					}
					g.out[m.ID][h] = x.Value
				}
			}
		}
	}
	return a, b, nil
}

// WindowNames are the series FromWindows reads.
var WindowNames = []string{"node_memory_SUnreclaim_bytes", "node_cgroups_cgroups", "memdoctor_memcg_dying_cgroups",
	"node_memory_MemAvailable_bytes", "memdoctor_process_uss_bytes"}

// FromWindows computes per-host values from windows (one per host), or,
// when perDay is set (a group of one host), per-day values of each: the
// day's change of the growing counts, the day's mean of the levels.
func FromWindows(ws []*sample.Window, perDay bool) Values {
	out := Values{}
	put := func(id, unit string, v float64) {
		if math.IsNaN(v) {
			return
		}
		if out[id] == nil {
			out[id] = map[string]float64{}
		}
		out[id][unit] = v
	}
	for _, w := range ws {
		cg := finite(w.Get("memdoctor_memcg_dying_cgroups"))
		if cg == nil {
			cg = finite(w.Get("node_cgroups_cgroups", "subsys_name", "memory"))
		}
		var procs []*sample.Series
		for _, p := range w.Select("memdoctor_process_uss_bytes") {
			procs = append(procs, finite(p))
		}
		uss := sumByTime(procs)
		slab, avail := finite(w.Get("node_memory_SUnreclaim_bytes")), finite(w.Get("node_memory_MemAvailable_bytes"))
		if !perDay {
			put("slab_unreclaimable_growth_per_day", w.Instance, slopePerDay(slab))
			put("memory_cgroups_growth_per_day", w.Instance, slopePerDay(cg))
			put("available_memory", w.Instance, mean(avail))
			put("process_uss", w.Instance, mean(uss))
			continue
		}
		for d, v := range perDayChange(slab) {
			put("slab_unreclaimable_growth_per_day", d, v)
		}
		for d, v := range perDayChange(cg) {
			put("memory_cgroups_growth_per_day", d, v)
		}
		for d, v := range perDayMean(avail) {
			put("available_memory", d, v)
		}
		for d, v := range perDayMean(uss) {
			put("process_uss", d, v)
		}
	}
	return out
}

// finite returns s without its NaN and infinite points (no size or count
// can be either; NonFinite says which series had them).
func finite(s *sample.Series) *sample.Series {
	if s == nil {
		return nil
	}
	bad := 0
	for _, p := range s.Points {
		if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
			bad++
		}
	}
	if bad == 0 {
		return s
	}
	out := &sample.Series{Name: s.Name, Labels: s.Labels, Points: make([]sample.Point, 0, len(s.Points)-bad)}
	for _, p := range s.Points {
		if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
			out.Points = append(out.Points, p)
		}
	}
	return out
}

// NonFinite names, one line each, the series of WindowNames in ws that hold
// NaN or infinite points, which FromWindows leaves out: for the notes.
func NonFinite(group string, ws []*sample.Window) []string {
	var out []string
	for _, w := range ws {
		for _, name := range WindowNames {
			for _, s := range w.Select(name) {
				n := 0
				for _, p := range s.Points {
					if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
						n++
					}
				}
				if n > 0 {
					out = append(out, fmt.Sprintf("group %s, %s: %s of %s %s NaN or infinite, left out", group, w.Instance, format.Count(float64(n), "point", "points"), s.Name, isAre(n)))
				}
			}
		}
	}
	return out
}

func sumByTime(ss []*sample.Series) *sample.Series {
	if len(ss) == 0 {
		return nil
	}
	byT := map[int64]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			byT[p.T] += p.V
		}
	}
	out := &sample.Series{Name: ss[0].Name}
	for t, v := range byT {
		out.Points = append(out.Points, sample.Point{T: t, V: v})
	}
	sort.Slice(out.Points, func(i, j int) bool { return out.Points[i].T < out.Points[j].T })
	return out
}

const dayMs = int64(24 * time.Hour / time.Millisecond)

func slopePerDay(s *sample.Series) float64 {
	if s == nil || len(s.Points) < 4 {
		return math.NaN()
	}
	step := max(1, len(s.Points)/1000)
	var xs, ys []float64
	for i := 0; i < len(s.Points); i += step {
		xs = append(xs, float64(s.Points[i].T-s.Points[0].T)/float64(dayMs))
		ys = append(ys, s.Points[i].V)
	}
	sl, _, ok := stats.TheilSen(xs, ys)
	if !ok {
		return math.NaN()
	}
	return sl
}

func mean(s *sample.Series) float64 {
	if s == nil || len(s.Points) == 0 {
		return math.NaN()
	}
	t := 0.0
	for _, p := range s.Points {
		t += p.V
	}
	return t / float64(len(s.Points))
}

// perDayChange is, per UTC day fully covered, last − first.
func perDayChange(s *sample.Series) map[string]float64 {
	out := map[string]float64{}
	if s == nil {
		return out
	}
	for d, ps := range byDay(s) {
		if len(ps) >= 2 && ps[len(ps)-1].T-ps[0].T >= dayMs*9/10 {
			out[d] = ps[len(ps)-1].V - ps[0].V
		}
	}
	return out
}

func perDayMean(s *sample.Series) map[string]float64 {
	out := map[string]float64{}
	if s == nil {
		return out
	}
	for d, ps := range byDay(s) {
		t := 0.0
		for _, p := range ps {
			t += p.V
		}
		out[d] = t / float64(len(ps))
	}
	return out
}

func byDay(s *sample.Series) map[string][]sample.Point {
	out := map[string][]sample.Point{}
	for _, p := range s.Points {
		d := time.UnixMilli(p.T).UTC().Format("2006-01-02")
		out[d] = append(out[d], p)
	}
	return out
}

// isAre is the verb for a count of n.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
