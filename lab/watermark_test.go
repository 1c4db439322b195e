package lab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/lab"
)

// Scenario 2 (incident 3) for real: a reader streaming more file data than
// memory and parallel allocation bursts make kswapd wake again within its
// nap at watermark_scale_factor 10, and diagnose of the 1 s recording fires
// watermark_thrash and watermark_gap_small with the same counts over the
// same span (once 1.25x apart), worded as counts, not daily rates. The run
// at 200 is logged beside it: its drop varies between repeats (109 → 65
// quick wake-ups in one trial), so it is reported, not asserted.
func TestWatermarkThrash(t *testing.T) {
	slowScenario(t)
	l := lab.Open(t)
	start := time.Now()
	res := l.Boot(t, lab.Run{Script: scenario(t, "watermark-thrash.sh"), Timeout: 8 * time.Minute, DiskMiB: 2048})
	t.Logf("scenario 2 (watermark thrash, two settings): %.1fs wall", time.Since(start).Seconds())
	if res.Exit != 0 {
		t.Fatalf("scenario exit %d\n%s", res.Exit, res.Log)
	}
	delta := func(wsf, key string) int64 {
		var sum int64
		for _, k := range strings.Split(key, "|") {
			if strings.HasSuffix(k, "*") {
				for _, name := range []string{"allocstall_dma", "allocstall_dma32", "allocstall_normal", "allocstall_movable", "allocstall_device"} {
					sum += statValue(t, res, "vm.after."+wsf, name) - statValue(t, res, "vm.before."+wsf, name)
				}
				continue
			}
			sum += statValue(t, res, "vm.after."+wsf, k) - statValue(t, res, "vm.before."+wsf, k)
		}
		return sum
	}
	hits10, hits200 := delta("10", "kswapd_low_wmark_hit_quickly"), delta("200", "kswapd_low_wmark_hit_quickly")
	t.Logf("quick kswapd wake-ups: %d at watermark_scale_factor 10, %d at 200; direct-reclaim stalls %d and %d",
		hits10, hits200, delta("10", "allocstall_*"), delta("200", "allocstall_*"))
	if hits10 < 10 {
		t.Fatalf("the workload did not make kswapd thrash at 10: %d quick wake-ups", hits10)
	}
	r := readReport(t, res, "diagnose-10.json")
	thrash, gap := r.finding("watermark_thrash"), r.finding("watermark_gap_small")
	if thrash == nil || gap == nil {
		t.Fatalf("diagnose at 10: watermark_thrash %v, watermark_gap_small %v: %+v", thrash != nil, gap != nil, r.Findings)
	}
	for _, name := range []string{"kswapd_low_wmark_hit_quickly_count", "allocstall_count", "span_seconds"} {
		a, ok1 := thrash.evidence(name)
		b, ok2 := gap.evidence(name)
		if !ok1 || !ok2 || a != b {
			t.Errorf("%s: watermark_thrash %v (%v), watermark_gap_small %v (%v)", name, a, ok1, b, ok2)
		}
	}
	if !strings.Contains(thrash.Summary, "too short a span for daily rates") || strings.Contains(thrash.Summary, "a day") {
		t.Errorf("a %s recording worded as daily rates: %s", "short", thrash.Summary)
	}
	if thrash.Severity == "critical" {
		t.Errorf("critical from a short recording: %s", thrash.Summary)
	}
}
