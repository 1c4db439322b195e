package diagnose

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// psiTotalSeries are the PSI memory stall totals the watermark rules read
// over a time range (node_exporter's names).
var psiTotalSeries = []string{"node_pressure_memory_waiting_seconds_total", "node_pressure_memory_stalled_seconds_total"}

var allocstallSeries = []string{"node_vmstat_allocstall_dma", "node_vmstat_allocstall_dma32", "node_vmstat_allocstall_normal",
	"node_vmstat_allocstall_movable", "node_vmstat_allocstall_device", "node_vmstat_allocstall"}

// reclaimRates are the reclaim counters over one span: their increases
// (n*) over the seconds between the first and last sample of the
// kswapd series, and the daily rates. All share that one span.
type reclaimRates struct {
	hits, stalls, scans    float64 // per day
	nHits, nStalls, nScans float64 // increases
	days, seconds          float64
	// psiSome and psiFull are the PSI memory stall shares over the span,
	// percent (nil when PSI was not recorded).
	psiSome, psiFull *float64
}

// short: too short a span to extrapolate daily rates (minEvidenceSeconds).
func (r reclaimRates) short() bool { return r.seconds < minEvidenceSeconds }

// judged are the values compared with the per-day thresholds: the daily
// rates, or on a short span the counts themselves (see Reclaim.Judged).
func (r reclaimRates) judged() (hits, stalls float64) {
	if r.short() {
		return r.nHits, r.nStalls
	}
	return r.hits, r.stalls
}

// describe says what was seen, as rates or, on a short span, as counts.
func (r reclaimRates) describe() string {
	if r.short() {
		return fmt.Sprintf("%s and %s in %s (too short a span for daily rates)",
			format.Count(r.nHits, "quick kswapd wake-up", "quick kswapd wake-ups"), format.Count(r.nStalls, "direct-reclaim stall", "direct-reclaim stalls"), format.ClockSeconds(r.seconds))
	}
	return fmt.Sprintf("%s and %s a day (over %.1f days)", format.Count(r.hits, "quick kswapd wake-up", "quick kswapd wake-ups"), format.Count(r.stalls, "direct-reclaim stall", "direct-reclaim stalls"), r.days)
}

func reclaimOver(w *sample.Window, sp span) reclaimRates {
	hits := within(w.Get("node_vmstat_kswapd_low_wmark_hit_quickly"), sp)
	if len(hits) < 2 {
		return reclaimRates{}
	}
	// One span for every counter: the kswapd series' own.
	sp = span{hits[0].T, hits[len(hits)-1].T}
	r := reclaimRates{days: sp.days(), seconds: float64(sp.To-sp.From) / 1000, nHits: increase(hits)}
	r.nScans = increase(within(w.Get("node_vmstat_pgscan_direct"), sp))
	var st []*sample.Series
	for _, n := range allocstallSeries {
		if s := w.Get(n); s != nil {
			st = append(st, s)
		}
	}
	if s := sumSeries(st); s != nil {
		r.nStalls = increase(within(s, sp))
	}
	if r.days > 0 {
		r.hits, r.stalls, r.scans = r.nHits/r.days, r.nStalls/r.days, r.nScans/r.days
	}
	r.psiSome = psiShare(w.Get("node_pressure_memory_waiting_seconds_total"), sp)
	r.psiFull = psiShare(w.Get("node_pressure_memory_stalled_seconds_total"), sp)
	return r
}

// psiShare is the share of the span, in percent, that a PSI stall total
// (seconds) grew: its increase over the time between its first and last
// point in sp, the stall share of the whole span where avg60 is only the
// last minute's. Nil with fewer than two points.
func psiShare(s *sample.Series, sp span) *float64 {
	ps := within(s, sp)
	if len(ps) < 2 {
		return nil
	}
	secs := float64(ps[len(ps)-1].T-ps[0].T) / 1000
	if secs <= 0 {
		return nil
	}
	v := 100 * increase(ps) / secs
	return &v
}

// currentReclaim: the rates over the newest boot since the last change of
// watermark_scale_factor, the span watermark_thrash judges (false with
// fewer than 3 samples of the kswapd counter).
func currentReclaim(w *sample.Window) (reclaimRates, bool) {
	cur, ok := currentSpan(w)
	if !ok {
		return reclaimRates{}, false
	}
	return reclaimOver(w, cur), true
}

// currentSpan is the span currentReclaim judges.
func currentSpan(w *sample.Window) (span, bool) {
	seg := lastSegment(w)
	if len(within(w.Get("node_vmstat_kswapd_low_wmark_hit_quickly"), seg)) < 3 {
		return span{}, false
	}
	cur := seg
	if ch := settingChanges(w.Get("node_sysctl_vm_watermark_scale_factor"), seg); len(ch) > 0 {
		cur = span{ch[len(ch)-1].T, seg.To}
	}
	return cur, true
}

// settingChanges returns the times where the series' value changed.
func settingChanges(s *sample.Series, sp span) []sample.Point {
	ps := within(s, sp)
	var out []sample.Point
	for i := 1; i < len(ps); i++ {
		if ps[i].V != ps[i-1].V {
			out = append(out, sample.Point{T: ps[i].T, V: ps[i-1].V})
		}
	}
	return out
}

// ReclaimSeries are the series WindowReclaim reads.
func ReclaimSeries() []string {
	return append([]string{"node_vmstat_kswapd_low_wmark_hit_quickly", "node_vmstat_pgscan_direct",
		"node_sysctl_vm_watermark_scale_factor", "node_boot_time_seconds"}, allocstallSeries...)
}

// WindowReclaim is the Reclaim model of a window over the span
// watermark_thrash judges (the newest boot, since the last change of
// watermark_scale_factor): counts, their span and per-day rates of
// kswapd_low_wmark_hit_quickly, allocstall and pgscan_direct; and, with
// parts > 1, the same over that many equal parts of the span, for an
// interval within one recording (false with fewer than 3 samples).
func WindowReclaim(w *sample.Window, parts int) (whole model.Reclaim, each []model.Reclaim, ok bool) {
	cur, ok := currentSpan(w)
	if !ok {
		return model.Reclaim{}, nil, false
	}
	ratesOver := func(sp span) (model.Reclaim, bool) {
		rr := reclaimOver(w, sp)
		if rr.seconds <= 0 {
			return model.Reclaim{}, false
		}
		var r model.Reclaim
		setRates(&r, rr.seconds, map[string]float64{
			"kswapd_low_wmark_hit_quickly": rr.nHits, "allocstall": rr.nStalls, "pgscan_direct": rr.nScans})
		return r, true
	}
	whole, ok = ratesOver(cur)
	if !ok {
		return model.Reclaim{}, nil, false
	}
	if parts > 1 {
		d := (cur.To - cur.From) / int64(parts)
		for i := range int64(parts) {
			if r, ok := ratesOver(span{cur.From + i*d, cur.From + (i+1)*d}); ok {
				each = append(each, r)
			}
		}
	}
	return whole, each, true
}

// AllocstallSeries are the direct-reclaim stall counters watermark_thrash
// sums (per zone on newer kernels, one counter on older ones).
func AllocstallSeries() []string { return append([]string(nil), allocstallSeries...) }
