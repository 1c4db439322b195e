package probe

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Row is one measure compared between two runs: A (before), B (after),
// B−A and B/A. Unit is "bytes" or "seconds".
type Row struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Diff  float64 `json:"diff"`
	Ratio float64 `json:"ratio"` // B/A; 0 when A is 0
}

// Comparison sets two probe results side by side: memory (median and worst
// USS, PSS, RSS during the run) and latency (p50, p90, p99, max, mean).
type Comparison struct {
	Kind string `json:"kind"` // "memdoctor-probe-comparison"
	A    Side   `json:"a"`
	B    Side   `json:"b"`
	Rows []Row  `json:"rows"`
	// Notes say why the two runs may not be comparable.
	Notes []string `json:"notes,omitempty"`
}

// Side names one of the two compared runs.
type Side struct {
	Label    string    `json:"label,omitempty"`
	Target   Target    `json:"target"`
	Start    time.Time `json:"start"`
	Requests Requests  `json:"requests"`
	Settings Settings  `json:"settings"`
}

// Compare puts a (before) and b (after) side by side.
func Compare(a, b *Result) Comparison {
	c := Comparison{Kind: Kind + "-comparison", A: side(a), B: side(b)}
	mem := func(name string, x, y MemStat) {
		c.Rows = append(c.Rows, row(name+" median", "bytes", float64(x.Median), float64(y.Median)),
			row(name+" worst", "bytes", float64(x.Worst), float64(y.Worst)))
	}
	mem("USS", a.Memory.USS, b.Memory.USS)
	mem("PSS", a.Memory.PSS, b.Memory.PSS)
	mem("RSS", a.Memory.RSS, b.Memory.RSS)
	lat := []struct {
		name string
		x, y float64
	}{
		{"latency p50", a.Latency.P50, b.Latency.P50},
		{"latency p90", a.Latency.P90, b.Latency.P90},
		{"latency p99", a.Latency.P99, b.Latency.P99},
		{"latency max", a.Latency.Max, b.Latency.Max},
		{"latency mean", a.Latency.Mean, b.Latency.Mean},
	}
	for _, l := range lat {
		c.Rows = append(c.Rows, row(l.name, "seconds", l.x, l.y))
	}
	c.Rows = append(c.Rows, row("throughput", "per_second", a.RequestsPerSecond, b.RequestsPerSecond))
	c.Notes = comparabilityNotes(a, b)
	return c
}

func side(r *Result) Side {
	return Side{Label: r.Label, Target: r.Target, Start: r.Start, Requests: r.Requests, Settings: r.Settings}
}

func row(name, unit string, a, b float64) Row {
	r := Row{Name: name, Unit: unit, A: a, B: b, Diff: b - a}
	if a != 0 {
		r.Ratio = b / a
	}
	return r
}

func comparabilityNotes(a, b *Result) []string {
	var n []string
	sa, sb := a.Settings, b.Settings
	if sa.URL != sb.URL {
		n = append(n, fmt.Sprintf("different URLs: %s vs %s", sa.URL, sb.URL))
	}
	if sa.Concurrency != sb.Concurrency || sa.RatePerSecond != sb.RatePerSecond {
		n = append(n, fmt.Sprintf("different load: -c %d rate %g vs -c %d rate %g; latencies are not comparable",
			sa.Concurrency, sa.RatePerSecond, sb.Concurrency, sb.RatePerSecond))
	}
	if a.Requests.Total != b.Requests.Total {
		n = append(n, fmt.Sprintf("different request counts: %d vs %d", a.Requests.Total, b.Requests.Total))
	}
	for _, r := range []*Result{a, b} {
		if bad := r.Requests.Errors + r.Requests.NotOK; bad > 0 {
			n = append(n, fmt.Sprintf("%s: %d of %d requests failed", orLabel(r), bad, r.Requests.Total))
		}
		if r.Memory.Samples < 5 {
			n = append(n, fmt.Sprintf("%s: only %d memory samples", orLabel(r), r.Memory.Samples))
		}
	}
	return n
}

func orLabel(r *Result) string {
	if r.Label != "" {
		return r.Label
	}
	return fmt.Sprintf("%s[%d] at %s", r.Target.Comm, r.Target.PID, r.Start.Format(time.RFC3339))
}

// WriteJSON writes c as indented JSON.
func (c Comparison) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}
