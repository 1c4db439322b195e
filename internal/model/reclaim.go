package model

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// PSITotalSeries are the PSI memory stall totals the watermark rules read
// over a time range (node_exporter's names).
var PSITotalSeries = []string{"node_pressure_memory_waiting_seconds_total", "node_pressure_memory_stalled_seconds_total"}

var allocstallSeries = []string{"node_vmstat_allocstall_dma", "node_vmstat_allocstall_dma32", "node_vmstat_allocstall_normal",
	"node_vmstat_allocstall_movable", "node_vmstat_allocstall_device", "node_vmstat_allocstall"}

// ReclaimRates are the reclaim counters over one span: their increases
// (n*) over the seconds between the first and last sample of the
// kswapd series, and the daily rates. All share that one span.
type ReclaimRates struct {
	Hits, Stalls, Scans    float64 // per day
	NHits, NStalls, NScans float64 // increases
	Days, Seconds          float64
	// PSISome and PSIFull are the PSI memory stall shares over the span,
	// percent (nil when PSI was not recorded).
	PSISome, PSIFull *float64
}

// Short says the span is too short to extrapolate daily rates (MinEvidenceSeconds).
func (r ReclaimRates) Short() bool { return r.Seconds < MinEvidenceSeconds }

// Judged are the values compared with the per-day thresholds: the daily
// rates, or on a short span the counts themselves (see Reclaim.Judged).
func (r ReclaimRates) Judged() (hits, stalls float64) {
	if r.Short() {
		return r.NHits, r.NStalls
	}
	return r.Hits, r.Stalls
}

// Describe says what was seen, as rates or, on a short span, as counts.
func (r ReclaimRates) Describe() string {
	if r.Short() {
		return fmt.Sprintf("%s and %s in %s (too short a span for daily rates)",
			format.Count(r.NHits, "quick kswapd wake-up", "quick kswapd wake-ups"), format.Count(r.NStalls, "direct-reclaim stall", "direct-reclaim stalls"), format.ClockSeconds(r.Seconds))
	}
	return fmt.Sprintf("%s and %s a day (over %.1f days)", format.Count(r.Hits, "quick kswapd wake-up", "quick kswapd wake-ups"), format.Count(r.Stalls, "direct-reclaim stall", "direct-reclaim stalls"), r.Days)
}

// ReclaimOver is the reclaim counters over the span sp of w.
func ReclaimOver(w *sample.Window, sp Span) ReclaimRates {
	hits := Within(w.Get("node_vmstat_kswapd_low_wmark_hit_quickly"), sp)
	if len(hits) < 2 {
		return ReclaimRates{}
	}
	// One span for every counter: the kswapd series' own.
	sp = Span{hits[0].T, hits[len(hits)-1].T}
	r := ReclaimRates{Days: sp.Days(), Seconds: float64(sp.To-sp.From) / 1000, NHits: Increase(hits)}
	r.NScans = Increase(Within(w.Get("node_vmstat_pgscan_direct"), sp))
	var st []*sample.Series
	for _, n := range allocstallSeries {
		if s := w.Get(n); s != nil {
			st = append(st, s)
		}
	}
	if s := SumSeries(st); s != nil {
		r.NStalls = Increase(Within(s, sp))
	}
	if r.Days > 0 {
		r.Hits, r.Stalls, r.Scans = r.NHits/r.Days, r.NStalls/r.Days, r.NScans/r.Days
	}
	r.PSISome = psiShare(w.Get("node_pressure_memory_waiting_seconds_total"), sp)
	r.PSIFull = psiShare(w.Get("node_pressure_memory_stalled_seconds_total"), sp)
	return r
}

// psiShare is the share of the span, in percent, that a PSI stall total
// (seconds) grew: its increase over the time between its first and last
// point in sp, the stall share of the whole span where avg60 is only the
// last minute's. Nil with fewer than two points.
func psiShare(s *sample.Series, sp Span) *float64 {
	ps := Within(s, sp)
	if len(ps) < 2 {
		return nil
	}
	secs := float64(ps[len(ps)-1].T-ps[0].T) / 1000
	if secs <= 0 {
		return nil
	}
	v := 100 * Increase(ps) / secs
	return &v
}

// currentReclaim: the rates over the newest boot since the last change of
// watermark_scale_factor, the span watermark_thrash judges (false with
// fewer than 3 samples of the kswapd counter).
func currentReclaim(w *sample.Window) (ReclaimRates, bool) {
	cur, ok := currentSpan(w)
	if !ok {
		return ReclaimRates{}, false
	}
	return ReclaimOver(w, cur), true
}

// currentSpan is the span currentReclaim judges.
func currentSpan(w *sample.Window) (Span, bool) {
	seg := LastSegment(w)
	if len(Within(w.Get("node_vmstat_kswapd_low_wmark_hit_quickly"), seg)) < 3 {
		return Span{}, false
	}
	cur := seg
	if ch := SettingChanges(w.Get("node_sysctl_vm_watermark_scale_factor"), seg); len(ch) > 0 {
		cur = Span{ch[len(ch)-1].T, seg.To}
	}
	return cur, true
}

// SettingChanges returns the times where the series' value changed.
func SettingChanges(s *sample.Series, sp Span) []sample.Point {
	ps := Within(s, sp)
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
func WindowReclaim(w *sample.Window, parts int) (whole Reclaim, each []Reclaim, ok bool) {
	cur, ok := currentSpan(w)
	if !ok {
		return Reclaim{}, nil, false
	}
	ratesOver := func(sp Span) (Reclaim, bool) {
		rr := ReclaimOver(w, sp)
		if rr.Seconds <= 0 {
			return Reclaim{}, false
		}
		var r Reclaim
		setRates(&r, rr.Seconds, map[string]float64{
			"kswapd_low_wmark_hit_quickly": rr.NHits, "allocstall": rr.NStalls, "pgscan_direct": rr.NScans})
		return r, true
	}
	whole, ok = ratesOver(cur)
	if !ok {
		return Reclaim{}, nil, false
	}
	if parts > 1 {
		d := (cur.To - cur.From) / int64(parts)
		for i := range int64(parts) {
			if r, ok := ratesOver(Span{cur.From + i*d, cur.From + (i+1)*d}); ok {
				each = append(each, r)
			}
		}
	}
	return whole, each, true
}

// AllocstallSeries are the direct-reclaim stall counters watermark_thrash
// sums (per zone on newer kernels, one counter on older ones).
func AllocstallSeries() []string { return append([]string(nil), allocstallSeries...) }
