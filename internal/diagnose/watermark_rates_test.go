package diagnose_test

import (
	"math"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/seriestest"
)

// watermark_gap_small and watermark_thrash judge the same counters of a
// recording: they must give the same daily rates. A recording that starts
// an hour after boot, with reclaim only while it runs, once gave a constant
// 1.25× between them (the uptime against the recording's span). The PSI
// stall share is over the same span in both (the totals' increase, not the
// last avg60).
func TestWatermarkRulesShareRates(t *testing.T) {
	t.Parallel()
	var over []sample.Metric
	for _, l := range []string{"node_vmstat_kswapd_low_wmark_hit_quickly 1200", "node_vmstat_allocstall_normal 240", "node_vmstat_pgscan_direct 7200"} {
		m, err := parseSeries(l)
		if err != nil {
			t.Fatal(err)
		}
		over = append(over, m)
	}
	latest := apply(baseSnapshot(t, "healthy-6.18-x86_64-hybrid"), ruleCase{uptime: 5 * time.Hour, overrides: over})
	w := seriestest.MustParse(t, `interval 1m
node_sysctl_vm_watermark_scale_factor 10+0x240
node_vmstat_kswapd_low_wmark_hit_quickly 0+5x240
node_vmstat_allocstall_normal 0+1x240
node_vmstat_pgscan_direct 0+30x240
node_pressure_memory_waiting_seconds_total 500+3x240
node_pressure_memory_stalled_seconds_total 80+0.6x240
`)
	r := diagnose.Run(diagnose.Data{Latest: latest, Window: w, Source: "test"})
	gap, thrash := findingOf(r, "watermark_gap_small"), findingOf(r, "watermark_thrash")
	if gap == nil || thrash == nil {
		t.Fatalf("both rules should fire: gap %v, thrash %v (%+v)", gap != nil, thrash != nil, r.Findings)
	}
	for name, want := range map[string]float64{"kswapd_low_wmark_hit_quickly_per_day": 1200 / (4.0 / 24), "allocstall_per_day": 240 / (4.0 / 24),
		"psi_memory_some_share_percent": 100 * 720 / (4 * 3600.0), "psi_memory_full_share_percent": 100 * 144 / (4 * 3600.0)} {
		g, th := evidenceValue(gap, name), evidenceValue(thrash, name)
		if !(math.Abs(g-want) <= want/100) || !(math.Abs(th-want) <= want/100) { // NaN: missing
			t.Errorf("%s: watermark_gap_small %.0f, watermark_thrash %.0f, want %.0f in both", name, g, th, want)
		}
	}
}

// evidenceValue is the value of f's evidence name, NaN when it has none.
func evidenceValue(f *model.Finding, name string) float64 {
	if e, ok := evidenceOf(f, name); ok {
		return e.Value
	}
	return math.NaN()
}
