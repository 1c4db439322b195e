package diagnose

import (
	"strings"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// The trace series (check --trace, record --trace): one scrape holds them
// for one trace; a recording holds them per interval. traceSource gives the
// rules one scrape either way.

// cgroupTraceSeries and reclaimTraceSeries are what the rules read of the
// trace (Meta.Reads, so a recording's window loads them).
var (
	cgroupTraceSeries = []string{"memdoctor_cgroup_trace_seconds", "memdoctor_cgroup_trace_ops",
		"memdoctor_cgroup_trace_dying", "memdoctor_cgroup_trace_dying_untracked",
		"memdoctor_cgroup_trace_dying_oldest_seconds", "memdoctor_cgroup_trace_dying_age_seconds"}
	reclaimTraceSeries = []string{"memdoctor_reclaim_trace_seconds", "memdoctor_reclaim_trace_stalls",
		"memdoctor_reclaim_trace_stall_seconds", "memdoctor_reclaim_trace_stall_p99_seconds",
		"memdoctor_reclaim_trace_stall_max_seconds", "memdoctor_reclaim_trace_reclaimed_pages",
		"memdoctor_reclaim_trace_kswapd_wakes"}
)

// traceSource is the scrape the trace evidence is read from: over a
// recording's window (record --trace) the intervals summed (traceTotals),
// else the host's own scrape (check --trace); nil when neither traced.
func traceSource(in *Input, secs string) *sample.Snapshot {
	if in.Window != nil && in.Window.Has(secs) {
		names := cgroupTraceSeries
		if strings.HasPrefix(secs, "memdoctor_reclaim_") {
			names = reclaimTraceSeries
		}
		return traceTotals(in.Window, model.LastSegment(in.Window), names)
	}
	if in.Host != nil {
		return in.Host.S
	}
	return nil
}

// traceTotals folds the per-interval trace series of a recording over the
// span into one scrape, as one trace of their summed length: counts and
// seconds add up; the p99, the longest stall and the oldest dying cgroup's
// age are the largest of the intervals' (the p99 so an upper bound); the
// dying counts are the newest. A downsampled read keeps one interval per
// step: the sums are then those of the intervals read, and the rates, which
// divide them by the summed seconds, stay right.
func traceTotals(w *sample.Window, sp model.Span, names []string) *sample.Snapshot {
	sc := &sample.Snapshot{}
	var newest int64 // the newest interval's time
	if ps := model.Within(w.Get(names[0]), sp); len(ps) > 0 {
		newest = ps[len(ps)-1].T
	}
	for _, name := range names {
		for _, s := range w.Select(name) {
			ps := model.Within(s, sp)
			if len(ps) == 0 {
				continue
			}
			var v float64
			switch {
			case strings.HasSuffix(name, "_p99_seconds") || strings.HasSuffix(name, "_max_seconds") || strings.HasSuffix(name, "_oldest_seconds"):
				for _, p := range ps {
					v = max(v, p.V)
				}
			case name == "memdoctor_cgroup_trace_dying" || name == "memdoctor_cgroup_trace_dying_untracked" || strings.HasSuffix(name, "_age_seconds"):
				last := ps[len(ps)-1]
				if last.T != newest {
					continue // not in the newest interval
				}
				v = last.V
			default:
				for _, p := range ps {
					v += p.V
				}
			}
			sc.Metrics = append(sc.Metrics, sample.Metric{Name: name, Labels: s.Labels, Value: v})
		}
	}
	if len(sc.Metrics) == 0 {
		return nil
	}
	return sc
}
