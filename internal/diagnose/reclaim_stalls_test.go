package diagnose_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// With a reclaim trace (check --trace) watermark_gap_small names the
// processes that stalled in direct reclaim, most time first, with count,
// total, p99 and max; memcg-limit stalls are not the watermarks' doing and
// are left out; a trace that saw no direct reclaim says so.
func TestWatermarkGapNamesDirectReclaimStallers(t *testing.T) {
	t.Parallel()
	stall := func(kind, comm, cg string, n, total, p99, mx float64) []sample.Metric {
		l := sample.L("cgroup", cg, "comm", comm, "kind", kind)
		return []sample.Metric{
			{Name: "memdoctor_reclaim_trace_stalls", Labels: l, Value: n},
			{Name: "memdoctor_reclaim_trace_stall_seconds", Labels: l, Value: total},
			{Name: "memdoctor_reclaim_trace_stall_p99_seconds", Labels: l, Value: p99},
			{Name: "memdoctor_reclaim_trace_stall_max_seconds", Labels: l, Value: mx},
		}
	}
	secs := sample.Metric{Name: "memdoctor_reclaim_trace_seconds", Value: 30}
	run := func(extra ...sample.Metric) *model.Finding {
		c := parseCase(t, filepath.Join("testdata", "watermark_gap_small", "fire_stalls.prom"))
		c.overrides = append(c.overrides, extra...)
		f := findingOf(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, c.base), c), Source: "test"}), "watermark_gap_small")
		if f == nil {
			t.Fatal("watermark_gap_small did not fire on fire_stalls")
		}
		return f
	}
	var ms []sample.Metric
	ms = append(ms, secs)
	ms = append(ms, stall("direct", "kafka-producer", "/system.slice/producer.service", 40, 0.8, 0.05, 0.09)...)
	ms = append(ms, stall("direct", "burst", "/jobs/b", 500, 2.5, 0.02, 0.03)...)
	ms = append(ms, stall("memcg", "limited", "/jobs/small", 900, 9, 0.02, 0.03)...)
	f := run(ms...)
	var lines []string
	for _, e := range f.Evidence {
		if e.Name == "direct_reclaim_staller" {
			lines = append(lines, e.Text)
		}
	}
	want := []string{
		"burst in /jobs/b: 500 stalls, 2500 ms in total, p99 20 ms, max 30 ms over 30 s",
		"kafka-producer in /system.slice/producer.service: 40 stalls, 800 ms in total, p99 50 ms, max 90 ms over 30 s",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("stallers:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasSuffix(f.Summary, "; stalled in direct reclaim during the trace: burst (2500 ms), kafka-producer (800 ms)") {
		t.Errorf("summary: %s", f.Summary)
	}

	none := run(secs)
	e, ok := evidenceOf(none, "direct_reclaim_stallers")
	if !ok || !strings.Contains(e.Text, "no process entered direct reclaim during the 30 s trace") {
		t.Errorf("a trace without direct reclaim: %+v", none.Evidence)
	}
	if plain := run(); strings.Contains(plain.Summary, "stalled in direct reclaim during") {
		t.Errorf("names stallers without a trace: %s", plain.Summary)
	}
}
