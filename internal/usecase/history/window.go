// Package history is memdoctor's use cases over saved history (a
// recording, saved files or captures, an OpenMetrics file): it opens what
// a command reads, resolves the window and the step it is read at (once,
// here, for Prometheus too), diagnoses each instance, merges them, builds
// report pages, compares and exports. Commands parse their flags and call
// it; rendering is internal/render (text, html).
package history

import (
	"fmt"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/promql"
)

// TargetPoints is how many points per series a diagnosis reads at most:
// the step grows with the range (findings' numbers come from the
// aggregates of every raw sample, never from dropped ones).
const TargetPoints = 4000

// Step is the resolution rules read a span of stored history at: the span
// over TargetPoints, to the second; 0 (raw samples) below a second.
func Step(span time.Duration) time.Duration {
	s := span / TargetPoints
	if s < time.Second {
		return 0
	}
	return s.Round(time.Second)
}

// PromStep is the resolution rules read a span from Prometheus at: the
// span over TargetPoints, at least a minute (a scrape interval).
func PromStep(span time.Duration) time.Duration {
	return max(time.Minute, (span / TargetPoints).Round(time.Second))
}

// FleetTargetPoints is how many points per series a fleet scan reads its
// suspects' full ranges at by default: fewer than TargetPoints, since a
// scan fetches the ranges of thousands of hosts and its cost (the
// engine's answer, the wire, memdoctor's decoding) grows with the points.
// The trend rules fit at most 1,000 points of a segment (14 days at
// TargetPoints are thinned to every fifth point, 801; at 1,500 points to
// every second, 750), counters' increases are the same at any step, and
// the latest state is read over the last three steps, as the pre-filter
// reads it. At 1,000 hosts × 14 days (docs/fleet.md) the verdicts were
// those of 4,000 points on every host, with 38 % of the samples, and at
// 10,000 on all but three hosts at a rule's threshold; at 1,000 points
// one of the 1,000 hosts gained a finding.
const FleetTargetPoints = 1500

// FleetStep is the resolution a fleet scan reads a span from Prometheus
// at by default: the span over FleetTargetPoints, at least a minute.
func FleetStep(span time.Duration) time.Duration {
	return max(time.Minute, (span / FleetTargetPoints).Round(time.Second))
}

// ChartStep is the resolution charts read a span at: half a display
// bucket, to the second (each step keeps its minimum, maximum and mean);
// 0 (raw samples) below a second.
func ChartStep(span time.Duration, buckets int) time.Duration {
	s := span / time.Duration(2*buckets)
	if s < time.Second {
		return 0
	}
	return s.Truncate(time.Second)
}

// ParseDuration reads a duration with days and weeks (30d, 1d12h, 720h).
func ParseDuration(s string) (time.Duration, error) {
	return promql.ParseDuration(s)
}

// ParseWhen reads --since/--until: RFC 3339, a date, or a duration before
// end ("-7d", "-12h"). "" is the zero time.
func ParseWhen(s string, end time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := ParseDuration(s[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: want RFC 3339, YYYY-MM-DD or -DURATION (-7d, -12h)", s)
		}
		return end.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339, YYYY-MM-DD or -DURATION (-7d, -12h)", s)
}

// ParseRange reads --since and --until against the end of the data. A
// start after the end is an inverted range, said as such (not as a range
// that "holds no data").
func ParseRange(since, until string, end time.Time) (f, u time.Time, err error) {
	if f, err = ParseWhen(since, end); err != nil {
		return f, u, fmt.Errorf("--since %w", err)
	}
	if u, err = ParseWhen(until, end); err != nil {
		return f, u, fmt.Errorf("--until %w", err)
	}
	if !f.IsZero() && !u.IsZero() && f.After(u) {
		return f, u, fmt.Errorf("inverted range: --since %s (%s) is after --until %s (%s); swap them",
			since, f.UTC().Format(time.RFC3339), until, u.UTC().Format(time.RFC3339))
	}
	return f, u, nil
}

// ParseWindow reads FROM/TO (each as --since reads it).
func ParseWindow(s string, end time.Time) (from, to time.Time, err error) {
	f, t, ok := strings.Cut(s, "/")
	if !ok {
		return from, to, fmt.Errorf("window %q: want FROM/TO, e.g. 2020-01-01/2020-01-08", s)
	}
	if from, err = ParseWhen(f, end); err != nil {
		return from, to, err
	}
	if to, err = ParseWhen(t, end); err != nil {
		return from, to, err
	}
	if !to.After(from) {
		return from, to, fmt.Errorf("window %q ends before it starts", s)
	}
	return from, to, nil
}

// Window is a range of time and the step it is read at.
type Window struct {
	From, To time.Time
	Step     time.Duration
}

// StoreWindow resolves --since/--until over an instance's data spanning
// first … last: the range, clipped to the data, and its Step.
func StoreWindow(first, last time.Time, since, until string) (Window, error) {
	f, u, err := ParseRange(since, until, last)
	if err != nil {
		return Window{}, err
	}
	if f.IsZero() || f.Before(first) {
		f = first
	}
	if u.IsZero() || u.After(last) {
		u = last
	}
	if !u.After(f) && !u.Equal(f) {
		return Window{}, fmt.Errorf("the range %s … %s holds no data (the data spans %s … %s)", f.Format(time.RFC3339), u.Format(time.RFC3339), first.Format(time.RFC3339), last.Format(time.RFC3339))
	}
	return Window{From: f, To: u, Step: Step(u.Sub(f))}, nil
}

// PromWindow resolves a Prometheus read: --until (RFC 3339, a date, or
// -DURATION before now), --range and --step (default PromStep of the
// range). The window ends at the end; its length is To - From.
func PromWindow(now time.Time, until, rangeS, stepS string) (Window, error) {
	return promWindow(now, until, rangeS, stepS, PromStep)
}

// FleetWindow resolves a fleet scan's read as PromWindow does, with
// FleetStep of the range as --step's default.
func FleetWindow(now time.Time, until, rangeS, stepS string) (Window, error) {
	return promWindow(now, until, rangeS, stepS, FleetStep)
}

func promWindow(now time.Time, until, rangeS, stepS string, defaultStep func(time.Duration) time.Duration) (Window, error) {
	end := now
	var err error
	if until != "" {
		if end, err = ParseWhen(until, now); err != nil {
			return Window{}, fmt.Errorf("--until %w", err)
		}
	}
	r, err := ParseDuration(rangeS)
	if err != nil || r <= 0 {
		return Window{}, fmt.Errorf("--range %q: want a duration such as 14d, 36h", rangeS)
	}
	step := defaultStep(r)
	if stepS != "" {
		if step, err = ParseDuration(stepS); err != nil || step <= 0 {
			return Window{}, fmt.Errorf("--step %q: want a duration such as 5m", stepS)
		}
	}
	return Window{From: end.Add(-r), To: end, Step: step}, nil
}

// Range is the window's length.
func (w Window) Range() time.Duration { return w.To.Sub(w.From) }
