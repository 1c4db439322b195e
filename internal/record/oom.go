package record

import (
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// oomHistoryLen is how many of its own recent samples the recorder fits a
// container's unreclaimable growth on (under 4 minutes at the default 15 s):
// recent enough to say where it heads now, enough points for a trend.
const oomHistoryLen = 15

// oomHistory is each cgroup's unreclaimable memory at the recorder's last
// samples; a cgroup missing from a sample is forgotten, so it holds at
// most oomHistoryLen points of the cgroups of the latest sample.
type oomHistory map[string][]sample.Point

// addOOMSeries adds, for each cgroup whose memory.stat s holds, its
// unreclaimable memory, its distance to the limit (only when one is set)
// and, when the unreclaimable part rose significantly over the recent
// samples, the seconds until it uses the distance.
func (h oomHistory) addOOMSeries(s *sample.Snapshot) {
	seen := map[string]bool{}
	// Added after the loop: an Add drops the snapshot's index, which the
	// next cgroup's lookups would build again over the whole sample (a
	// rebuild for each cgroup, 0.3 MB a sample on a host of 40 cgroups).
	var add []sample.Metric
	put := func(name string, v float64, cg string) {
		add = append(add, sample.Metric{Name: name, Labels: sample.L("cgroup", cg), Value: v})
	}
	for _, u := range s.Select("memdoctor_cgroup_memory_usage_bytes") {
		cg := u.Labels.Get("cgroup")
		m, ok := model.OOMMemoryFrom(s, cg)
		if !ok || seen[cg] {
			continue
		}
		seen[cg] = true
		put("memdoctor_cgroup_memory_unreclaimable_bytes", float64(m.UnreclaimableBytes), cg)
		if m.DistanceBytes == nil {
			delete(h, cg)
			continue
		}
		put("memdoctor_cgroup_memory_oom_distance_bytes", float64(*m.DistanceBytes), cg)
		ps := append(h[cg], sample.Point{T: s.Time.UnixMilli(), V: float64(m.UnreclaimableBytes)})
		if n := len(ps); n > 1 && ps[n-1].T <= ps[n-2].T {
			ps = ps[n-1:] // the clock went back: start again
		}
		if len(ps) > oomHistoryLen {
			ps = append(ps[:0:0], ps[len(ps)-oomHistoryLen:]...)
		}
		h[cg] = ps
		if g, ok := model.OOMGrowth(ps); ok {
			m.SetGrowth(g)
			put("memdoctor_cgroup_memory_oom_eta_seconds", *m.ETASeconds, cg)
		}
	}
	for _, m := range add {
		s.AddMetric(m)
	}
	for cg := range h {
		if !seen[cg] {
			delete(h, cg)
		}
	}
}
