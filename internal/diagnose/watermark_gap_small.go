package diagnose

// watermark_gap_small: kswapd's window is too narrow for the allocation rate.
//
// Mechanism: below a zone's low watermark kswapd wakes and reclaims until
// high; below min, allocating tasks reclaim themselves (direct reclaim:
// allocstall_*), burning CPU in sys and softirq while requests wait. The
// window low−min (= high−low) is max(min/4, managed × watermark_scale_factor
// / 10000). With the default factor 10 it is about 0.1 % of a zone, or
// min_free_kbytes/4 spread over the zones: ~10 MB on an 8 GB host (incident
// 3), so a traffic burst crosses it before kswapd can act.
// kswapd_low_wmark_hit_quickly counts kswapd being woken again within its
// 100 ms nap: the window is too small for the burst rate.
//
// Fires only with evidence of reclaim trouble since boot: direct reclaim
// (any allocstall or pgscan_direct), or kswapd_low_wmark_hit_quickly at 10
// or more per day; and only while the largest lowmem zone's window is below
// the recommended size. Critical from 1000 direct-reclaim stalls per day.
// The rates are over the uptime for one snapshot, and over the span
// watermark_thrash judges for a time range (the same numbers in both
// findings); from less than an hour the counts themselves are compared
// with the daily thresholds and shown with their span, never extrapolated.
//
// Recommendation: the smallest factor (a multiple of 10) that makes the
// largest lowmem zone's window 2 % of the zone, but at least 64 MiB and no
// more than 512 MiB (what the window must absorb is an allocation burst,
// which does not grow with the zone), capped at 1000 and at a MemAvailable
// cost of 10 % of MemTotal. Incident 3's
// 8 GB host gets 200, the value that fixed it there (low−min 10 → 99 MB,
// low-watermark hits 1000 → 100 per day).
//
// With check --trace (BPF) the finding counts kswapd's wake-ups and names
// the processes that stalled in direct reclaim during the trace
// (reclaim_stalls.go). Over a time range it gives the PSI stall share of
// the span the rates cover, as watermark_thrash does.
//
// Known false positives: a batch host that reclaims by design (streaming
// through far more file data than RAM) shows kswapd activity with no harm;
// PSI memory stall and sys CPU around the bursts tell the difference.

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type watermarkGapSmall struct{}

func init() { register(watermarkGapSmall{}) }

func (watermarkGapSmall) Meta() Meta {
	return Meta{ID: "watermark_gap_small", Title: "kswapd window too small for the allocation bursts",
		Needs: []Need{
			{"node_zoneinfo_managed_pages", "read /proc/zoneinfo (node_exporter: --collector.zoneinfo)"},
			{"node_sysctl_vm_watermark_scale_factor", "read /proc/sys/vm (node_exporter: --collector.sysctl --collector.sysctl.include=vm.watermark_scale_factor,vm.min_free_kbytes)"},
			{"node_vmstat_kswapd_low_wmark_hit_quickly", "read /proc/vmstat"},
			// The recommendation is bounded by what it costs of MemTotal.
			{"node_memory_MemTotal_bytes", "read /proc/meminfo"},
		},
		Reads:     append(append([]string(nil), model.PSITotalSeries...), reclaimTraceSeries...), // the stall share; record --trace: who stalled, over the window
		Charts:    []string{ChartZoneWatermarks, ChartReclaimRates, ChartCPUSysSoftirq},
		Prefilter: &Prefilter{About: "quick kswapd wake-ups and direct reclaim, where watermark_scale_factor is known", Queries: gapQueries, Score: gapScore},
		Doc:       "kswapd's window (low − min) too narrow for the reclaim bursts seen; recommends a `watermark_scale_factor` with its predicted watermarks and cost"}
}

func (watermarkGapSmall) Eval(in *Input) []model.Finding {
	if !memoryUsable(in, "watermark_gap_small", false) {
		return nil
	}
	h := in.Host
	w := &h.Watermarks
	r := h.Reclaim
	direct := r.Allocstall > 0 || r.PgscanDirect > 0
	if r.Counts != nil {
		direct = r.Counts["allocstall"] > 0 || r.Counts["pgscan_direct"] > 0
	}
	hits := r.Judged("kswapd_low_wmark_hit_quickly")
	if !direct && hits < gapMinHitsPerDay {
		return nil
	}
	next := w.Recommended
	if next == nil || next.WatermarkScaleFactor <= w.WatermarkScaleFactor {
		return nil // the window is already as wide as we would make it
	}
	rec := next.WatermarkScaleFactor
	cur := w.Evaluate(w.WatermarkScaleFactor)
	sev := model.Warning
	if r.Judged("allocstall") >= 1000 {
		sev = model.Critical
	}
	seen := fmt.Sprintf("%.0f direct-reclaim stalls and %.0f quick low-watermark wake-ups per day", r.Judged("allocstall"), hits)
	rates := []model.Evidence{
		ev("kswapd_low_wmark_hit_quickly_per_day", hits, "per_day"),
		ev("allocstall_per_day", r.Judged("allocstall"), "per_day"),
		ev("pgscan_direct_per_day", r.Judged("pgscan_direct"), "per_day"),
	}
	if r.PerDay != nil && r.Short() {
		seen = fmt.Sprintf("%s and %s in %s (too short a span for daily rates)",
			format.Count(r.Counts["allocstall"], "direct-reclaim stall", "direct-reclaim stalls"),
			format.Count(r.Counts["kswapd_low_wmark_hit_quickly"], "quick low-watermark wake-up", "quick low-watermark wake-ups"), format.ClockSeconds(r.Seconds))
		rates = []model.Evidence{
			ev("kswapd_low_wmark_hit_quickly_count", r.Counts["kswapd_low_wmark_hit_quickly"], "count"),
			ev("allocstall_count", r.Counts["allocstall"], "count"),
			ev("pgscan_direct_count", r.Counts["pgscan_direct"], "count"),
			ev("span_seconds", r.Seconds, "seconds"),
		}
	}
	f := model.Finding{ID: "watermark_gap_small", Severity: sev, Subject: "zone " + cur.Zone,
		Summary: fmt.Sprintf("kswapd's window on %s is %s (low−min); reclaim bursts cross it: %s",
			cur.Zone, format.Bytes(cur.LowMinGapBytes), seen),
		Evidence: append([]model.Evidence{
			ev("watermark_scale_factor", float64(w.WatermarkScaleFactor), ""),
			ev("min_free_kbytes", float64(w.MinFreeKbytes), "kB"),
			ev("scale_factor_effective_from", float64(w.EffectiveFrom), ""),
			ev("low_min_gap_bytes", float64(cur.LowMinGapBytes), "bytes")}, rates...),
	}
	f.Evidence = append(f.Evidence, []model.Evidence{
		ev("recommended_watermark_scale_factor", float64(rec), ""),
		ev("recommended_low_min_gap_bytes", float64(next.LowMinGapBytes), "bytes"),
		ev("recommended_min_pages", float64(next.MinPages), "pages"),
		ev("recommended_low_pages", float64(next.LowPages), "pages"),
		ev("recommended_high_pages", float64(next.HighPages), "pages"),
		ev("mem_available_delta_bytes", float64(next.MemAvailableDeltaBytes), "bytes"),
	}...)
	if w.WatermarkScaleFactor < w.EffectiveFrom {
		f.Evidence = append(f.Evidence, evText("note", fmt.Sprintf("watermark_scale_factor %d is below %d, where it starts to matter: the window is min_free_kbytes/4 spread over the zones",
			w.WatermarkScaleFactor, w.EffectiveFrom)))
	}
	if r.PSISomeAvg60 >= 0 {
		f.Evidence = append(f.Evidence, ev("psi_memory_some_avg60_percent", r.PSISomeAvg60, "percent"))
	}
	if ev, clause := psiEvidence(r.PSISomePercent, r.PSIFullPercent); len(ev) > 0 { // a time range: over its span
		f.Evidence = append(f.Evidence, ev...)
		f.Summary += clause
	}
	if ev, sum := reclaimTraceEvidence(traceSource(in, "memdoctor_reclaim_trace_seconds")); len(ev) > 0 { // check --trace, record --trace
		f.Evidence = append(f.Evidence, ev...)
		f.Summary += sum
	}
	f.Remedies = []model.Remedy{
		{Title: fmt.Sprintf("widen kswapd's window: watermark_scale_factor %d → %d (%s window on %s; MemAvailable %s)",
			w.WatermarkScaleFactor, rec, format.Bytes(next.LowMinGapBytes), next.Zone, format.Bytes(next.MemAvailableDeltaBytes)),
			Commands: []string{
				fmt.Sprintf("sysctl -w vm.watermark_scale_factor=%d", rec),
				fmt.Sprintf("echo 'vm.watermark_scale_factor = %d' > /etc/sysctl.d/60-memdoctor-watermarks.conf", rec),
			},
			Risk: fmt.Sprintf("kswapd starts earlier and keeps %s more free, which lowers MemAvailable by that much; takes effect at once, no restart",
				format.Bytes(-next.MemAvailableDeltaBytes)),
			Undo: fmt.Sprintf("sysctl -w vm.watermark_scale_factor=%d; rm /etc/sysctl.d/60-memdoctor-watermarks.conf", w.WatermarkScaleFactor)},
		{Title: "verify: kswapd_low_wmark_hit_quickly and allocstall_* per day should fall (incident 3: 1000 → 100 per day)",
			Commands: []string{"grep -E 'kswapd_low_wmark_hit_quickly|allocstall' /proc/vmstat"},
			Risk:     "none (read-only)"},
	}
	return []model.Finding{f}
}

// gapMinHitsPerDay is the reclaim trouble the rule needs without direct
// reclaim: quick kswapd wake-ups per day.
const gapMinHitsPerDay = 10

// gapQueries: reclaim trouble (quick wake-ups over the range, direct
// reclaim since boot) on the instances whose watermark_scale_factor is
// known (the rule needs it).
func gapQueries(a PrefilterArgs) []PromQuery {
	R := a.Window()
	known := " and on (instance) group by (instance) (last_over_time(" + sel("node_sysctl_vm_watermark_scale_factor", a.Match) + "[" + a.Latest() + "]))"
	return []PromQuery{
		{"hits", byInstance("increase("+sel("node_vmstat_kswapd_low_wmark_hit_quickly", a.Match)+"["+R+"])") + known},
		{"direct", byInstance("last_over_time("+sel("node_vmstat_pgscan_direct", a.Match)+"["+a.Latest()+"])") + " > 0" + known},
	}
}

func gapScore(v PrefilterValues) float64 {
	s := v.V("hits") / v.Days / gapMinHitsPerDay
	if v.V("direct") > 0 {
		s = max(s, 1)
	}
	return s
}
