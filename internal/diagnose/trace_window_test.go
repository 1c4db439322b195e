package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// A recording made with record --trace holds the trace per interval:
// traceTotals folds three 10 s intervals into one 30 s trace, so the
// stallers are named over the whole window (counts and times summed, the
// p99 and the longest stall the largest of the intervals'), kswapd's
// wake-ups are summed over the intervals and nodes, and the dying
// count and oldest age are the newest interval's; a window without the
// trace gives nothing.
func TestTraceTotalsOverARecording(t *testing.T) {
	t.Parallel()
	w := &sample.Window{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	series := func(name string, l sample.Labels, vs ...float64) {
		s := &sample.Series{Name: name, Labels: l}
		for i, v := range vs {
			s.Points = append(s.Points, sample.Point{T: base + int64(i)*10_000, V: v})
		}
		w.Add(s)
	}
	if traceTotals(w, model.Span{From: base, To: base + 20_000}, reclaimTraceSeries) != nil {
		t.Error("totals of a window without a trace")
	}
	burst := sample.L("cgroup", "/jobs/b", "comm", "burst", "kind", "direct")
	series("memdoctor_reclaim_trace_seconds", nil, 10, 10, 10)
	series("memdoctor_reclaim_trace_stalls", burst, 100, 0, 400)
	series("memdoctor_reclaim_trace_stall_seconds", burst, 0.5, 0, 2)
	series("memdoctor_reclaim_trace_stall_p99_seconds", burst, 0.03, 0, 0.02)
	series("memdoctor_reclaim_trace_stall_max_seconds", burst, 0.04, 0, 0.035)
	series("memdoctor_reclaim_trace_kswapd_wakes", sample.L("node", "0"), 7, 0, 30)
	series("memdoctor_reclaim_trace_kswapd_wakes", sample.L("node", "1"), 2)
	series("memdoctor_cgroup_trace_seconds", sample.L("method", "bpf"), 10, 10, 10)
	series("memdoctor_cgroup_trace_dying", nil, 5, 9, 12)
	series("memdoctor_cgroup_trace_dying_oldest_seconds", nil, 8, 18, 28)
	sp := model.Span{From: base, To: base + 20_000}
	ev, sum := reclaimTraceEvidence(traceTotals(w, sp, reclaimTraceSeries))
	var stallers []string
	for _, e := range ev {
		if e.Name == "direct_reclaim_staller" {
			stallers = append(stallers, e.Text)
		}
	}
	if len(stallers) != 1 || stallers[0] != "burst in /jobs/b: 500 stalls, 2500 ms in total, p99 30 ms, max 40 ms over 30 s" {
		t.Errorf("evidence %+v", ev)
	}
	if n, ok := evidenceValue(ev, "kswapd_wakes_traced"); !ok || n != 39 {
		t.Errorf("kswapd wake-ups %v, want 39 (both nodes, every interval): %+v", n, ev)
	}
	if s, ok := evidenceValue(ev, "reclaim_trace_seconds"); !ok || s != 30 {
		t.Errorf("trace seconds %v, want 30: %+v", s, ev)
	}
	if !strings.Contains(sum, "kswapd woken 39 times during the 30 s trace; stalled in direct reclaim during the trace: burst (2500 ms)") {
		t.Errorf("summary %q", sum)
	}
	ev, sum = dyingAge(traceTotals(w, sp, cgroupTraceSeries))
	if n, ok := evidenceValue(ev, "removed_in_trace_still_dying"); !ok || n != 12 {
		t.Errorf("still dying %v, want the newest interval's 12: %+v", n, ev)
	}
	if a, ok := evidenceValue(ev, "oldest_dying_age_seconds"); !ok || a != 28 {
		t.Errorf("oldest age %v, want 28: %+v", a, ev)
	}
	if !strings.Contains(sum, "12 of the cgroups removed during the trace are still dying") {
		t.Errorf("summary %q", sum)
	}
}

func evidenceValue(ev []model.Evidence, name string) (float64, bool) {
	for _, e := range ev {
		if e.Name == name {
			return e.Value, true
		}
	}
	return 0, false
}
