package fleettest

import (
	"os"
	"time"
)

// spans cuts the window's steps into spans of time that end at multiples
// of span since the epoch (so that each fills whole TSDB blocks): each is
// its first step and its number of steps. A span of zero or less is the
// whole window.
func (f *Fleet) spans(span time.Duration) [][2]int {
	o := f.opt
	if span <= 0 {
		return [][2]int{{0, f.steps}}
	}
	per := max(1, int(span/o.Interval))
	var out [][2]int
	for c, k0 := 0, 0; k0 < f.steps; c++ {
		next := f.start.Truncate(span).Add(time.Duration(c+1) * span)
		n := min(per, f.steps-k0, int((next.Sub(f.start)+o.Interval-1)/o.Interval)-k0)
		out = append(out, [2]int{k0, n})
		k0 += n
	}
	return out
}

// Label is one label of a generated series.
type Label struct{ Name, Value string }

// Series is one host's samples of one metric over a span of the window,
// exactly as Write writes them: the same name, labels, timestamps and
// values.
type Series struct {
	Name string
	// Labels are sorted by name, without __name__.
	Labels []Label
	// T are the samples' times in milliseconds since the epoch.
	T []int64
	V []float64
}

// Metrics is the number of series each host has.
const Metrics = nMetrics

// labels returns the labels of host i's series of each metric, as Write
// writes them.
func (f *Fleet) labels(i int) [nMetrics][]Label {
	h := f.Hosts[i]
	base := []Label{{"instance", h.Instance}, {"job", "node"}, {"rack", h.Rack}}
	var out [nMetrics][]Label
	for m := range nMetrics {
		switch m {
		case mCgroups:
			out[m] = append(base[:3:3], Label{"subsys_name", "memory"})
		case mUname:
			out[m] = []Label{{"domainname", "(none)"}, {"instance", h.Instance}, {"job", "node"}, {"machine", "x86_64"},
				{"nodename", h.Instance[:len(h.Instance)-5]}, {"rack", h.Rack}, {"release", h.Release}, {"sysname", "Linux"},
				{"version", "#1 SMP"}}
		default:
			out[m] = base
		}
	}
	return out
}

// Stream generates the fleet as Write does, span by span of time (see
// spans; span <= 0 is the whole window in one), and gives fn each host's
// series of each span: the spans in order, the hosts in order within a
// span. fn must not keep the series: their slices are reused. Stream
// stops at fn's first error and returns it. It holds one host's samples of
// one span at a time, whatever the fleet's size.
func (f *Fleet) Stream(span time.Duration, fn func(span, host int, series []Series) error) error {
	o := f.opt
	spans := f.spans(span)
	states := make([]*state, len(f.Hosts))
	lbls := make([][nMetrics][]Label, len(f.Hosts))
	per := 0
	for _, sp := range spans {
		per = max(per, sp[1])
	}
	series := make([]Series, nMetrics)
	for m := range series {
		series[m] = Series{Name: metricNames[m], T: make([]int64, per), V: make([]float64, per)}
	}
	start, end, iv := float64(f.start.Unix()), float64(o.End.Unix()), o.Interval.Seconds()
	var v [nMetrics]float64
	for c, sp := range spans {
		k0, n := sp[0], sp[1]
		for i := range f.Hosts {
			if states[i] == nil {
				states[i] = f.newState(i)
				lbls[i] = f.labels(i)
			}
			s := states[i]
			for m := range series {
				series[m].Labels = lbls[i][m]
				series[m].T, series[m].V = series[m].T[:n], series[m].V[:n]
			}
			for j := range n {
				t := start + float64(k0+j)*iv
				s.step(k0+j, t, start, end, iv, &v)
				for m := range series {
					series[m].T[j] = int64(t) * 1000
					series[m].V[j] = v[m]
				}
			}
			if len(spans) == 1 {
				states[i], lbls[i] = nil, [nMetrics][]Label{} // one span: done with the host
			}
			if err := fn(c, i, series); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteManifest writes dir/manifest.json for a fleet written by Stream
// (no files of its own) and returns it.
func (f *Fleet) WriteManifest(dir string) (*Manifest, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	m := &Manifest{Start: f.start, End: f.opt.End, Interval: f.opt.Interval.String(), Seed: f.opt.Seed,
		Samples: int64(len(f.Hosts)) * int64(f.steps) * nMetrics}
	return f.saveManifest(dir, m)
}
