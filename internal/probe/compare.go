package probe

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memdoctor/memdoctor/internal/render"
	"github.com/memdoctor/memdoctor/internal/termsafe"
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

// WriteText writes c as a table: measure, A, B, change and ratio.
func (c Comparison) WriteText(w io.Writer) error {
	la, lb := c.A.Label, c.B.Label
	if la == "" {
		la = "A"
	}
	if lb == "" {
		lb = "B"
	}
	var b strings.Builder
	_, _ = termsafe.Fprintf(&b, "A: %s  %s[%d]  %s  %d requests\n", la, c.A.Target.Comm, c.A.Target.PID, c.A.Start.Format(time.RFC3339), c.A.Requests.Total)
	_, _ = termsafe.Fprintf(&b, "B: %s  %s[%d]  %s  %d requests\n\n", lb, c.B.Target.Comm, c.B.Target.PID, c.B.Start.Format(time.RFC3339), c.B.Requests.Total)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	_, _ = termsafe.Fprintf(tw, "measure\t%s\t%s\tchange\tB/A\t\n", la, lb)
	for _, r := range c.Rows {
		ratio := "-"
		if r.A != 0 {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", r.Name, formatValue(r.A, r.Unit), formatValue(r.B, r.Unit), signedValue(r.Diff, r.Unit), ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range c.Notes {
		_, _ = termsafe.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "bytes":
		return render.MiB(v)
	case "seconds":
		return render.Millis(v)
	case "per_second":
		return fmt.Sprintf("%.1f/s", v)
	}
	return fmt.Sprintf("%g", v)
}

func signedValue(v float64, unit string) string {
	s := formatValue(math.Abs(v), unit)
	if v < 0 {
		return "-" + s
	}
	return "+" + s
}

// WriteText writes one result: the load, the status counts, the latency
// percentiles and the memory summary.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	name := ""
	if r.Label != "" {
		name = " (" + r.Label + ")"
	}
	_, _ = termsafe.Fprintf(&b, "probe%s: %s[%d]  %s\n", name, r.Target.Comm, r.Target.PID, r.Settings.URL)
	fmt.Fprintf(&b, "load: %d requests, %d workers", r.Requests.Total, r.Settings.Concurrency)
	if r.Settings.RatePerSecond > 0 {
		fmt.Fprintf(&b, ", rate cap %g/s", r.Settings.RatePerSecond)
	}
	fmt.Fprintf(&b, ", %.1f s, %.1f req/s\n", r.ElapsedSeconds, r.RequestsPerSecond)
	fmt.Fprintf(&b, "answers: %d ok, %d non-2xx, %d failed", r.Requests.OK, r.Requests.NotOK, r.Requests.Errors)
	if len(r.Requests.Status) > 0 {
		_, _ = termsafe.Fprintf(&b, "  (%s)", statusList(r.Requests.Status))
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency\tp50\tp90\tp99\tmax\tmean\t\n")
	l := r.Latency
	fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s\t\n", render.Millis(l.P50), render.Millis(l.P90), render.Millis(l.P99), render.Millis(l.Max), render.Millis(l.Mean))
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "memory\tbaseline\tmedian\tworst\tafter\t\n")
	m := r.Memory
	memLine := func(name string, s MemStat, pick func(MemSample) int64) {
		base, after := "-", "-"
		if m.Baseline != nil {
			base = render.MiB(float64(pick(*m.Baseline)))
		}
		if m.After != nil {
			after = render.MiB(float64(pick(*m.After)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", name, base, render.MiB(float64(s.Median)), render.MiB(float64(s.Worst)), after)
	}
	memLine("USS", m.USS, func(s MemSample) int64 { return s.USSBytes })
	memLine("PSS", m.PSS, func(s MemSample) int64 { return s.PSSBytes })
	memLine("RSS", m.RSS, func(s MemSample) int64 { return s.RSSBytes })
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "(%d memory samples every %g s during the run)\n", m.Samples, r.Settings.IntervalSeconds)
	for _, n := range r.Notes {
		_, _ = termsafe.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func statusList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
