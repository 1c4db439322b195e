package model

import (
	"math"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Span is a time range [From, To] in milliseconds.
type Span struct{ From, To int64 }

// Days is the span's length in days.
func (s Span) Days() float64 { return float64(s.To-s.From) / float64(24*time.Hour/time.Millisecond) }

// Segments splits the window at reboots: wherever node_boot_time_seconds
// changes by more than a minute (the kernel's boot time drifts by
// fractions of a second), and at gaps longer than maxGap. No slope is ever
// fitted across a segment boundary. Without a boot-time series the whole
// window is one segment.
func Segments(w *sample.Window) []Span {
	all := Span{w.From.UnixMilli(), w.To.UnixMilli()}
	bt := w.Get("node_boot_time_seconds")
	if bt == nil || len(bt.Points) == 0 {
		return []Span{all}
	}
	var out []Span
	cur := Span{bt.Points[0].T, bt.Points[0].T}
	prev := bt.Points[0].V
	for _, p := range bt.Points[1:] {
		if math.Abs(p.V-prev) > 60 {
			out = append(out, cur)
			cur = Span{p.T, p.T}
		}
		cur.To = p.T
		prev = p.V
	}
	out = append(out, cur)
	return out
}

// ThinToEnds returns what keeps, of a series read over w, the points rules
// that declare it EndsOnly read: the first and last point within each
// segment of w (w must hold node_boot_time_seconds already, when the
// source has it) and the series' first and last point. Step aggregates
// are kept for the same points.
func ThinToEnds(w *sample.Window) func(*sample.Series) *sample.Series {
	segs := Segments(w)
	return func(s *sample.Series) *sample.Series {
		n := len(s.Points)
		keep := make([]bool, n)
		if n > 0 {
			keep[0], keep[n-1] = true, true
		}
		for _, sp := range segs {
			lo := sort.Search(n, func(i int) bool { return s.Points[i].T >= sp.From })
			hi := sort.Search(n, func(i int) bool { return s.Points[i].T > sp.To })
			if lo < hi {
				keep[lo], keep[hi-1] = true, true
			}
		}
		out := &sample.Series{Name: s.Name, Labels: s.Labels}
		for i, k := range keep {
			if !k {
				continue
			}
			out.Points = append(out.Points, s.Points[i])
			if s.Max != nil {
				out.Max = append(out.Max, s.Max[i])
			}
			if s.Min != nil {
				out.Min = append(out.Min, s.Min[i])
			}
			if s.Mean != nil {
				out.Mean = append(out.Mean, s.Mean[i])
			}
		}
		return out
	}
}

// LastSegment returns the newest segment.
func LastSegment(w *sample.Window) Span {
	s := Segments(w)
	return s[len(s)-1]
}

// Within returns the points of s inside sp (nil-safe).
func Within(s *sample.Series, sp Span) []sample.Point {
	if s == nil {
		return nil
	}
	lo := sort.Search(len(s.Points), func(i int) bool { return s.Points[i].T >= sp.From })
	hi := sort.Search(len(s.Points), func(i int) bool { return s.Points[i].T > sp.To })
	return s.Points[lo:hi]
}

// XY turns points into days since the first point and values, thinned to at
// most maxN evenly spaced points (Theil–Sen is O(n²)).
func XY(ps []sample.Point, maxN int) (xs, ys []float64) {
	if len(ps) == 0 {
		return nil, nil
	}
	step := 1
	if len(ps) > maxN {
		step = (len(ps) + maxN - 1) / maxN
	}
	t0 := ps[0].T
	for i := 0; i < len(ps); i += step {
		xs = append(xs, float64(ps[i].T-t0)/float64(24*time.Hour/time.Millisecond))
		ys = append(ys, ps[i].V)
	}
	return xs, ys
}

// Increase is a counter's increase over the points, counting through
// resets (a drop means the counter restarted from zero).
func Increase(ps []sample.Point) float64 {
	var inc float64
	for i := 1; i < len(ps); i++ {
		d := ps[i].V - ps[i-1].V
		if d < 0 {
			d = ps[i].V
		}
		inc += d
	}
	return inc
}

// SumSeries adds series point by point on the timestamps of the first
// (all series of a window share the sampling times of their source).
func SumSeries(ss []*sample.Series) *sample.Series {
	if len(ss) == 0 {
		return nil
	}
	out := &sample.Series{Name: ss[0].Name, Points: append([]sample.Point(nil), ss[0].Points...)}
	for _, s := range ss[1:] {
		byT := make(map[int64]float64, len(s.Points))
		for _, p := range s.Points {
			byT[p.T] = p.V
		}
		for i := range out.Points {
			out.Points[i].V += byT[out.Points[i].T]
		}
	}
	return out
}

// ThinPairs keeps at most maxN evenly spaced pairs of xa, xb.
func ThinPairs(xa, xb []float64, maxN int) (ya, yb []float64) {
	if len(xa) <= maxN {
		return xa, xb
	}
	step := (len(xa) + maxN - 1) / maxN
	for i := 0; i < len(xa); i += step {
		ya = append(ya, xa[i])
		yb = append(yb, xb[i])
	}
	return ya, yb
}

// Align returns the values of a and b at the timestamps both have.
func Align(a, b []sample.Point) (xa, xb []float64) {
	byT := make(map[int64]float64, len(b))
	for _, p := range b {
		byT[p.T] = p.V
	}
	for _, p := range a {
		if v, ok := byT[p.T]; ok {
			xa = append(xa, p.V)
			xb = append(xb, v)
		}
	}
	return xa, xb
}

// LatestSnapshot rebuilds the instant state at the end of a window: the last
// point of every series that has one within maxAge of the window's end.
func LatestSnapshot(w *sample.Window, maxAge time.Duration) *sample.Snapshot {
	s := &sample.Snapshot{Time: w.To, Instance: w.Instance}
	end := w.To.UnixMilli()
	for _, ser := range w.Series {
		p, ok := ser.Last()
		if !ok || end-p.T > maxAge.Milliseconds() {
			continue
		}
		s.AddMetric(sample.Metric{Name: ser.Name, Labels: ser.Labels, Value: p.V})
	}
	return s
}

// WarmUp is how long after a boot a host's memory may still be filling
// (page cache, database pools, the cgroups of a day's jobs): a decline or
// growth in that time is not yet judged.
const WarmUp = 3 * 24 * time.Hour

// BootedAt says whether segment sp starts at a boot (within an hour of
// node_boot_time_seconds) and how long it has run since.
func BootedAt(w *sample.Window, sp Span) (since time.Duration, ok bool) {
	bt := Within(w.Get("node_boot_time_seconds"), sp)
	if len(bt) == 0 {
		return 0, false
	}
	after := sp.From - int64(bt[0].V*1000)
	if after < 0 || after > time.Hour.Milliseconds() {
		return 0, false
	}
	return time.Duration(sp.To-int64(bt[0].V*1000)) * time.Millisecond, true
}

// PaidBack says whether a count falls back by at least a quarter of its
// range after some peak: what a working kernel does with cgroups it frees
// (a leak only ever grows, up to noise).
func PaidBack(ps []sample.Point) bool {
	if len(ps) == 0 {
		return false
	}
	lo, hi := ps[0].V, ps[0].V
	for _, p := range ps {
		lo, hi = min(lo, p.V), max(hi, p.V)
	}
	peak, fall := ps[0].V, 0.0
	for _, p := range ps {
		peak = max(peak, p.V)
		fall = max(fall, peak-p.V)
	}
	return hi > lo && fall >= 0.25*(hi-lo)
}
