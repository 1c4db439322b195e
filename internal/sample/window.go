package sample

import (
	"sort"
	"time"
)

// Point is one sample: T in milliseconds since the epoch.
type Point struct {
	T int64
	V float64
}

// Series is one named series over a time range. When it was read at a
// coarser step than it was recorded, Points hold the last raw value of each
// step (exact for counters) and Max, Min and Mean the step's aggregates of
// the raw samples (same length as Points; nil when Points are raw).
type Series struct {
	Name   string
	Labels Labels
	Points []Point
	Max    []float64
	Min    []float64
	Mean   []float64
}

// Aggregates says which step aggregates (Max, Min, Mean) a downsampled
// read keeps for a series; the others are left nil.
type Aggregates uint8

// The step aggregates, one bit each.
const (
	KeepMax Aggregates = 1 << iota
	KeepMin
	KeepMean
	KeepAll = KeepMax | KeepMin | KeepMean
)

// Key identifies the series: name plus labels.
func (s *Series) Key() string { return s.Name + s.Labels.String() }

// Last returns the last point, and false for an empty series.
func (s *Series) Last() (Point, bool) {
	if len(s.Points) == 0 {
		return Point{}, false
	}
	return s.Points[len(s.Points)-1], true
}

// Window is every series of one instance over a time range, as rules see it.
type Window struct {
	Instance string
	From, To time.Time
	// Step is the resolution of the points; 0 means raw samples.
	Step   time.Duration
	Series []*Series
	index  map[string][]int
}

// Add appends a series.
func (w *Window) Add(s *Series) {
	w.Series = append(w.Series, s)
	w.index = nil
}

func (w *Window) build() {
	if w.index != nil {
		return
	}
	w.index = make(map[string][]int, len(w.Series))
	for i, s := range w.Series {
		w.index[s.Name] = append(w.index[s.Name], i)
	}
}

// Select returns every series of a name whose labels include the given
// name, value pairs, in label order.
func (w *Window) Select(name string, match ...string) []*Series {
	w.build()
	var out []*Series
	for _, i := range w.index[name] {
		s := w.Series[i]
		ok := true
		for j := 0; j+1 < len(match); j += 2 {
			if s.Labels.Get(match[j]) != match[j+1] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels.String() < out[j].Labels.String() })
	return out
}

// Get returns the first series of a name matching the labels, or nil.
func (w *Window) Get(name string, match ...string) *Series {
	ss := w.Select(name, match...)
	if len(ss) == 0 {
		return nil
	}
	return ss[0]
}

// Has reports whether any series of the name exists.
func (w *Window) Has(name string) bool {
	w.build()
	return len(w.index[name]) > 0
}

// Rates turns a counter's points into per-second rates between successive
// points, stamped at the later one; a drop counts from zero (the counter
// restarted).
func Rates(ps []Point) []Point {
	out := make([]Point, 0, len(ps))
	for i := 1; i < len(ps); i++ {
		dt := float64(ps[i].T-ps[i-1].T) / 1000
		if dt <= 0 {
			continue
		}
		d := ps[i].V - ps[i-1].V
		if d < 0 {
			d = ps[i].V
		}
		out = append(out, Point{T: ps[i].T, V: d / dt})
	}
	return out
}
