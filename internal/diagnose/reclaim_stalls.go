package diagnose

import (
	"fmt"
	"sort"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/render"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Who stalled in direct reclaim, from check --trace (BPF on the vmscan
// tracepoints): the watermark rules name the processes that paid for a
// window kswapd could not keep.

// stallersNamed is how many processes a finding names.
const stallersNamed = 5

// directReclaimStallers returns evidence naming the processes that sat in
// direct (host-wide) reclaim during the trace, most time first, and a
// clause for the summary; nothing when no trace ran. A trace that saw none
// says so.
func directReclaimStallers(s *sample.Snapshot) ([]model.Evidence, string) {
	if s == nil {
		return nil, ""
	}
	secs, ok := s.Get("memdoctor_reclaim_trace_seconds")
	if !ok || secs <= 0 {
		return nil, ""
	}
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
	window := render.Number(secs) + " s"
	if len(rows) == 0 {
		return []model.Evidence{evText("direct_reclaim_stallers", "no process entered direct reclaim during the "+window+" trace")}, ""
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].total > rows[j].total })
	var out []model.Evidence
	var named string
	for i, r := range rows {
		if i >= stallersNamed {
			break
		}
		out = append(out, evText("direct_reclaim_staller", fmt.Sprintf("%s in %s: %.0f stalls, %s ms in total, p99 %s ms, max %s ms over %s",
			r.comm, r.cgroup, r.n, render.Number(1000*r.total), render.Number(1000*r.p99), render.Number(1000*r.maxSec), window)))
		if i < 3 {
			if named != "" {
				named += ", "
			}
			named += fmt.Sprintf("%s (%s ms)", r.comm, render.Number(1000*r.total))
		}
	}
	return out, "; stalled in direct reclaim during the trace: " + named
}
