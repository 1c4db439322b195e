package diagnose

// watermark_thrash: reclaim bursts cross the watermarks over and over.
//
// Mechanism (incident 3): when allocation bursts outrun kswapd's window
// (low − min), free memory falls below min and allocating tasks reclaim
// themselves; kswapd is woken again within its 100 ms nap
// (kswapd_low_wmark_hit_quickly). CPU goes to sys and softirq, context
// switches rise, requests time out — while "available" looks plentiful.
//
// Method, over the newest boot: daily rates of kswapd_low_wmark_hit_quickly,
// allocstall_* and pgscan_direct; per zone, the share of samples whose free
// pages were below the low watermark (the step's minimum when the data is
// downsampled, so short dips count); the correlation of direct-reclaim
// rates with sys+softirq CPU and with context switches; and, when the data
// contains a change of vm.watermark_scale_factor, the rates before and
// after it. With PSI recorded, the share of the span tasks stalled on
// memory (the PSI totals' increase over the span's seconds: the whole
// span, where avg60 is only its last minute); recorded with --trace, the
// kswapd wake-ups and the processes that stalled in direct reclaim.
//
// Fires: warning from 100 quick kswapd wake-ups or 10 direct-reclaim stalls
// a day under the current setting, critical from 1000 stalls a day. Daily
// rates are extrapolated only from an hour or more (minEvidenceSeconds): a
// shorter recording is judged on its counts, which the day's can only
// exceed, and the finding gives them with the span ("12 stalls in 44s"). When a
// change of the setting brought the rates below that, an info finding
// reports the verified improvement instead.
//
// Known false positives: a batch host streaming far more file data than RAM
// reclaims by design; low CPU correlation and a PSI stall share near 0 say
// so.

import (
	"fmt"
	"math"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/stats"
)

type watermarkThrash struct{}

func init() { register(watermarkThrash{}) }

func (watermarkThrash) Meta() Meta {
	reads := append([]string{"node_vmstat_pgscan_direct", "node_vmstat_pgscan_kswapd", "node_cpu_seconds_total",
		"node_context_switches_total", "node_sysctl_vm_watermark_scale_factor", "memdoctor_zoneinfo_free_pages",
		"node_zoneinfo_nr_free_pages", "node_zoneinfo_low_pages", "node_zoneinfo_min_pages", "node_zoneinfo_managed_pages",
		"node_boot_time_seconds"}, model.AllocstallSeries()...)
	reads = append(reads, model.PSITotalSeries...) // the stall share over the span
	reads = append(reads, reclaimTraceSeries...)   // record --trace: who stalled
	return Meta{ID: "watermark_thrash", Trend: true, Title: "reclaim bursts crossing the watermarks",
		Needs:     []Need{{"node_vmstat_kswapd_low_wmark_hit_quickly", "record /proc/vmstat over time (node_exporter: --collector.vmstat.fields including kswapd and allocstall)"}},
		Reads:     reads,
		StepMin:   []string{"memdoctor_zoneinfo_free_pages", "node_zoneinfo_nr_free_pages"},
		Charts:    []string{ChartZoneWatermarks, ChartReclaimRates, ChartCPUSysSoftirq},
		Prefilter: &Prefilter{About: "quick kswapd wake-ups and direct-reclaim stalls, over the range and the last day", Queries: thrashQueries, Score: thrashScore},
		Alerts:    thrashAlerts,
		Doc:       "quick kswapd wake-ups and direct-reclaim stalls per day, free below low per zone, CPU correlation, before/after a change of `watermark_scale_factor`"}
}

// thrashQueries: quick kswapd wake-ups and direct-reclaim stalls over the
// range and over the last day.
func thrashQueries(a PrefilterArgs) []PromQuery {
	hq := sel("node_vmstat_kswapd_low_wmark_hit_quickly", a.Match)
	return []PromQuery{
		{"hits", byInstance("increase(" + hq + "[" + a.Window() + "])")},
		{"hits_1d", byInstance("increase(" + hq + "[1d])")},
		{"stalls", "sum by (instance) (" + promql.SumIncrease(model.AllocstallSeries(), a.Match, a.Window()) + ")"},
		{"stalls_1d", "sum by (instance) (" + promql.SumIncrease(model.AllocstallSeries(), a.Match, "1d") + ")"},
	}
}

// thrashScore: wake-ups or stalls per day, on average or on the last day.
func thrashScore(v PrefilterValues) float64 {
	return max(max(v.V("hits")/v.Days, v.V("hits_1d"))/thrashHitsPerDay,
		max(v.V("stalls")/v.Days, v.V("stalls_1d"))/thrashStallsPerDay)
}

func thrashAlerts(o AlertOptions) []Alert {
	return []Alert{{Name: "MemdoctorWatermarkThrash", For: "30m", Severity: "warning",
		Expr: fmt.Sprintf("increase(%s[1d]) >= %s\nor\nsum without (memdoctor_counter) (\n%s\n) >= %s",
			sel("node_vmstat_kswapd_low_wmark_hit_quickly", o.Match), promNum(thrashHitsPerDay),
			promql.SumIncrease(model.AllocstallSeries(), o.Match, "1d"), promNum(thrashStallsPerDay)),
		Summary: fmt.Sprintf("reclaim on {{ $labels.instance }} crosses the watermarks: %s or more quick kswapd wake-ups, or %s or more direct-reclaim stalls, in a day",
			promNum(thrashHitsPerDay), promNum(thrashStallsPerDay))}}
}

const (
	thrashHitsPerDay   = 100
	thrashStallsPerDay = 10
	thrashCritStalls   = 1000
)

func (watermarkThrash) Eval(in *Input) []model.Finding {
	w := in.Window
	if w == nil {
		return nil
	}
	seg := model.LastSegment(w)
	hits := model.Within(w.Get("node_vmstat_kswapd_low_wmark_hit_quickly"), seg)
	if len(hits) < 3 {
		in.Note("watermark_thrash", "fewer than 3 samples of /proc/vmstat since the last boot", "record longer")
		return nil
	}
	// Judge the period under the current setting; keep the one before for
	// the before/after comparison.
	wsf := w.Get("node_sysctl_vm_watermark_scale_factor")
	cur := seg
	var before *model.ReclaimRates
	var change *sample.Point
	if ch := model.SettingChanges(wsf, seg); len(ch) > 0 {
		c := ch[len(ch)-1]
		change = &c
		prev := model.Span{From: seg.From, To: c.T}
		if c2 := len(ch) - 2; c2 >= 0 {
			prev.From = ch[c2].T
		}
		b := model.ReclaimOver(w, prev)
		before = &b
		cur = model.Span{From: c.T, To: seg.To}
	}
	now := model.ReclaimOver(w, cur)
	bad := func(r model.ReclaimRates) bool {
		h, st := r.Judged()
		return h >= thrashHitsPerDay || st >= thrashStallsPerDay
	}
	if !bad(now) {
		if before != nil && bad(*before) {
			return []model.Finding{improved(w, change, *before, now)}
		}
		if now.Short() && (now.NHits > 0 || now.NStalls > 0) {
			in.Note("watermark_thrash", fmt.Sprintf("%s: below the thresholds, and too short to judge a day", now.Describe()), "record longer")
		}
		return nil
	}
	sev := model.Warning
	if _, st := now.Judged(); st >= thrashCritStalls {
		sev = model.Critical
	}
	f := model.Finding{ID: "watermark_thrash", Severity: sev, Subject: subject(w, "host"),
		Summary:  "reclaim bursts cross the watermarks: " + now.Describe(),
		Evidence: rateEvidence(now),
	}
	if ev, clause := psiEvidence(now.PSISome, now.PSIFull); len(ev) > 0 {
		f.Evidence = append(f.Evidence, ev...)
		f.Summary += clause
	}
	if ev, sum := reclaimTraceEvidence(traceSource(in, "memdoctor_reclaim_trace_seconds")); len(ev) > 0 {
		f.Evidence = append(f.Evidence, ev...)
		f.Summary += sum
	}
	// Zones: how often free pages were below low.
	free := w.Select("memdoctor_zoneinfo_free_pages")
	if len(free) == 0 {
		free = w.Select("node_zoneinfo_nr_free_pages")
	}
	for _, fs := range free {
		node, zone := fs.Labels.Get("node"), fs.Labels.Get("zone")
		low := w.Get("node_zoneinfo_low_pages", "node", node, "zone", zone)
		if low == nil || lastValue(w.Get("node_zoneinfo_managed_pages", "node", node, "zone", zone)) == 0 {
			continue
		}
		below, n := belowShare(fs, low, cur)
		if n > 0 && below > 0 {
			f.Evidence = append(f.Evidence, ev("zone_"+zone+"_time_below_low_percent", 100*below, "percent"))
		}
	}
	// Correlation of direct reclaim with sys+softirq CPU and context switches.
	var st []*sample.Series
	for _, n := range model.AllocstallSeries() {
		if s := w.Get(n); s != nil {
			st = append(st, s)
		}
	}
	if stall := model.SumSeries(st); stall != nil {
		sr := sample.Rates(model.Within(stall, cur))
		var cpu []*sample.Series
		cpu = append(cpu, w.Select("node_cpu_seconds_total", "mode", "system")...)
		cpu = append(cpu, w.Select("node_cpu_seconds_total", "mode", "softirq")...)
		if c := model.SumSeries(cpu); c != nil {
			if a, b := model.Align(sr, sample.Rates(model.Within(c, cur))); len(a) >= 8 {
				if r, p, ok := stats.Pearson(a, b); ok && !math.IsNaN(r) {
					f.Evidence = append(f.Evidence, ev("stall_vs_sys_softirq_cpu_correlation", r, "ratio"), ev("stall_vs_cpu_p", p, ""))
				}
			}
		}
		if cs := w.Get("node_context_switches_total"); cs != nil {
			if a, b := model.Align(sr, sample.Rates(model.Within(cs, cur))); len(a) >= 8 {
				if r, _, ok := stats.Pearson(a, b); ok && !math.IsNaN(r) {
					f.Evidence = append(f.Evidence, ev("stall_vs_context_switches_correlation", r, "ratio"))
				}
			}
		}
	}
	if before != nil {
		f.Evidence = append(f.Evidence,
			ev("watermark_scale_factor_before", change.V, ""),
			ev("kswapd_low_wmark_hit_quickly_per_day_before", before.Hits, "per_day"),
			ev("allocstall_per_day_before", before.Stalls, "per_day"))
	}
	cw := lastValue(wsf)
	if h := in.Host; h != nil && h.Watermarks.Recommended != nil && float64(h.Watermarks.Recommended.WatermarkScaleFactor) > cw {
		r := h.Watermarks.Recommended
		f.Evidence = append(f.Evidence,
			ev("watermark_scale_factor", cw, ""),
			ev("recommended_watermark_scale_factor", float64(r.WatermarkScaleFactor), ""),
			ev("recommended_low_min_gap_bytes", float64(r.LowMinGapBytes), "bytes"),
			ev("recommended_min_pages", float64(r.MinPages), "pages"),
			ev("recommended_low_pages", float64(r.LowPages), "pages"),
			ev("recommended_high_pages", float64(r.HighPages), "pages"),
			ev("mem_available_delta_bytes", float64(r.MemAvailableDeltaBytes), "bytes"))
		f.Remedies = append(f.Remedies, model.Remedy{
			Title: fmt.Sprintf("widen kswapd's window: watermark_scale_factor %.0f → %d (%s on %s, MemAvailable %s)",
				cw, r.WatermarkScaleFactor, format.Bytes(r.LowMinGapBytes), r.Zone, format.Bytes(r.MemAvailableDeltaBytes)),
			Commands: []string{fmt.Sprintf("sysctl -w vm.watermark_scale_factor=%d", r.WatermarkScaleFactor),
				fmt.Sprintf("echo 'vm.watermark_scale_factor = %d' > /etc/sysctl.d/60-memdoctor-watermarks.conf", r.WatermarkScaleFactor)},
			Risk: "kswapd reclaims earlier and keeps more free; MemAvailable drops by the amount shown",
			Undo: fmt.Sprintf("sysctl -w vm.watermark_scale_factor=%.0f; rm /etc/sysctl.d/60-memdoctor-watermarks.conf", cw)})
	}
	f.Remedies = append(f.Remedies,
		model.Remedy{Title: "keep recording and compare the rates after the change (this rule reports before/after when the setting changes in the data)",
			Commands: []string{"memdoctor diagnose --from SRC --since -7d"}, Risk: "none (read-only)"},
		model.Remedy{Title: "reduce allocation bursts at the source (batch small writes, e.g. Kafka producers with byte-sized batch.size)",
			Risk: "an application change"})
	return []model.Finding{f}
}

// belowShare is the share of samples in sp whose free pages (the step's
// minimum when downsampled) were below the low watermark.
func belowShare(free, low *sample.Series, sp model.Span) (share float64, n int) {
	lowAt := map[int64]float64{}
	for _, p := range model.Within(low, sp) {
		lowAt[p.T] = p.V
	}
	ps := model.Within(free, sp)
	off := 0
	if len(ps) > 0 {
		off = indexOf(free, ps[0].T)
	}
	below := 0
	for i, p := range ps {
		l, ok := lowAt[p.T]
		if !ok {
			continue
		}
		n++
		v := p.V
		if free.Min != nil && off+i < len(free.Min) {
			v = free.Min[off+i]
		}
		if v < l {
			below++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(below) / float64(n), n
}

func indexOf(s *sample.Series, t int64) int {
	for i, p := range s.Points {
		if p.T == t {
			return i
		}
	}
	return 0
}

// rateEvidence: daily rates over a span long enough, else the counts and
// the span (never a rate extrapolated from minutes).
func rateEvidence(r model.ReclaimRates) []model.Evidence {
	if r.Short() {
		return []model.Evidence{
			ev("kswapd_low_wmark_hit_quickly_count", r.NHits, "count"),
			ev("allocstall_count", r.NStalls, "count"),
			ev("pgscan_direct_count", r.NScans, "count"),
			ev("span_seconds", r.Seconds, "seconds"),
		}
	}
	return []model.Evidence{
		ev("kswapd_low_wmark_hit_quickly_per_day", r.Hits, "per_day"),
		ev("allocstall_per_day", r.Stalls, "per_day"),
		ev("pgscan_direct_per_day", r.Scans, "per_day"),
	}
}

func improved(w *sample.Window, change *sample.Point, before, now model.ReclaimRates) model.Finding {
	summary := fmt.Sprintf("verified: after watermark_scale_factor changed from %.0f, quick kswapd wake-ups fell %.0f → %.0f a day and direct-reclaim stalls %.0f → %.0f",
		change.V, before.Hits, now.Hits, before.Stalls, now.Stalls)
	if before.Short() || now.Short() {
		summary = fmt.Sprintf("after watermark_scale_factor changed from %.0f: quick kswapd wake-ups %.0f in %s before, %.0f in %s after; direct-reclaim stalls %.0f before, %.0f after (spans too short for daily rates: record longer to verify)",
			change.V, before.NHits, format.ClockSeconds(before.Seconds), now.NHits, format.ClockSeconds(now.Seconds), before.NStalls, now.NStalls)
	}
	return model.Finding{ID: "watermark_thrash", Severity: model.Info, Subject: subject(w, "host"),
		Summary: summary,
		Evidence: []model.Evidence{
			ev("watermark_scale_factor_before", change.V, ""),
			ev("kswapd_low_wmark_hit_quickly_per_day_before", before.Hits, "per_day"),
			ev("kswapd_low_wmark_hit_quickly_per_day", now.Hits, "per_day"),
			ev("allocstall_per_day_before", before.Stalls, "per_day"),
			ev("allocstall_per_day", now.Stalls, "per_day"),
			ev("days_after_change", now.Days, "days"),
		},
		Remedies: []model.Remedy{{Title: "keep the setting (persist it in /etc/sysctl.d) and keep watching the rates",
			Commands: []string{"sysctl vm.watermark_scale_factor"}, Risk: "none"}},
	}
}
