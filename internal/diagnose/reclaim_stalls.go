package diagnose

import (
	"fmt"
	"sort"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Who stalled in direct reclaim, from check --trace (BPF on the vmscan
// tracepoints): the watermark rules name the processes that paid for a
// window kswapd could not keep, and how often kswapd was woken.

// stallersNamed is how many processes a finding names.
const stallersNamed = 5

// reclaimTraceEvidence returns evidence from the reclaim trace: how often
// kswapd was woken and the trace's length, and the processes that sat in
// direct (host-wide) reclaim during it, most time first; and clauses for
// the summary. Nothing when no trace ran. A trace that saw no direct
// reclaim says so.
func reclaimTraceEvidence(s *sample.Snapshot) ([]model.Evidence, string) {
	if s == nil {
		return nil, ""
	}
	secs, ok := s.Get("memdoctor_reclaim_trace_seconds")
	if !ok || secs <= 0 {
		return nil, ""
	}
	// The tracer counts kswapd_wake on every node and exports the nodes
	// woken during the interval: no series is no wake-up.
	var wakes float64
	for _, m := range s.Select("memdoctor_reclaim_trace_kswapd_wakes") {
		wakes += m.Value
	}
	window := format.Number(secs) + " s"
	out := []model.Evidence{ev("kswapd_wakes_traced", wakes, "count"), ev("reclaim_trace_seconds", secs, "seconds")}
	woke := fmt.Sprintf("; kswapd woken %s during the %s trace", format.Count(wakes, "time", "times"), window)
	type row struct {
		comm, cgroup          string
		n, total, p99, maxSec float64
	}
	var rows []row
	for _, m := range s.Select("memdoctor_reclaim_trace_stalls", "kind", "direct") {
		comm, cg := m.Labels.Get("comm"), m.Labels.Get("cgroup")
		l := []string{"kind", "direct", "comm", comm, "cgroup", cg}
		rows = append(rows, row{comm: comm, cgroup: cg, n: m.Value,
			total:  s.Value("memdoctor_reclaim_trace_stall_seconds", l...),
			p99:    s.Value("memdoctor_reclaim_trace_stall_p99_seconds", l...),
			maxSec: s.Value("memdoctor_reclaim_trace_stall_max_seconds", l...)})
	}
	if len(rows) == 0 {
		return append(out, evText("direct_reclaim_stallers", "no process entered direct reclaim during the "+window+" trace")), woke
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].total > rows[j].total })
	var named string
	for i, r := range rows {
		if i >= stallersNamed {
			break
		}
		out = append(out, evText("direct_reclaim_staller", fmt.Sprintf("%s in %s: %.0f stalls, %s ms in total, p99 %s ms, max %s ms over %s",
			r.comm, r.cgroup, r.n, format.Number(1000*r.total), format.Number(1000*r.p99), format.Number(1000*r.maxSec), window)))
		if i < 3 {
			if named != "" {
				named += ", "
			}
			named += fmt.Sprintf("%s (%s ms)", r.comm, format.Number(1000*r.total))
		}
	}
	return out, woke + "; stalled in direct reclaim during the trace: " + named
}
