package text

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/probe"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// ProbeCompareText writes two probe runs as a table: measure, A, B, change and ratio.
func ProbeCompareText(w io.Writer, c probe.Comparison) error {
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", r.Name, probeValue(r.A, r.Unit), probeValue(r.B, r.Unit), signedProbeValue(r.Diff, r.Unit), ratio)
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

func probeValue(v float64, unit string) string {
	switch unit {
	case "bytes":
		return format.MiB(v)
	case "seconds":
		return format.Millis(v)
	case "per_second":
		return fmt.Sprintf("%.1f/s", v)
	}
	return fmt.Sprintf("%g", v)
}

func signedProbeValue(v float64, unit string) string {
	s := probeValue(math.Abs(v), unit)
	if v < 0 {
		return "-" + s
	}
	return "+" + s
}

// ProbeText writes one probe result: the load, the status counts, the latency
// percentiles and the memory summary.
func ProbeText(w io.Writer, r *probe.Result) error {
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
	fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s\t\n", format.Millis(l.P50), format.Millis(l.P90), format.Millis(l.P99), format.Millis(l.Max), format.Millis(l.Mean))
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "memory\tbaseline\tmedian\tworst\tafter\t\n")
	m := r.Memory
	memLine := func(name string, s probe.MemStat, pick func(probe.MemSample) int64) {
		base, after := "-", "-"
		if m.Baseline != nil {
			base = format.MiB(float64(pick(*m.Baseline)))
		}
		if m.After != nil {
			after = format.MiB(float64(pick(*m.After)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", name, base, format.MiB(float64(s.Median)), format.MiB(float64(s.Worst)), after)
	}
	memLine("USS", m.USS, func(s probe.MemSample) int64 { return s.USSBytes })
	memLine("PSS", m.PSS, func(s probe.MemSample) int64 { return s.PSSBytes })
	memLine("RSS", m.RSS, func(s probe.MemSample) int64 { return s.RSSBytes })
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
