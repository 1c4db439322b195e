package diagnose

import (
	"math"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/stats"
)

// fit is a robust trend: Theil–Sen slope per day and Mann–Kendall p-value.
type fit struct {
	Slope     float64 // per day
	Intercept float64
	P         float64
	N         int
	OK        bool

	// The points fitted (time in days, the cycle removed) and the
	// corrected Var S, for Limit.
	xs, ys []float64
	varS   float64
}

// trendLimitAlpha is 1 minus the level of the interval Limit reads: the
// 90 % interval, whose end nearer zero the slope passes with 95 %
// confidence.
const trendLimitAlpha = 0.1

// Limit is the end of the slope's 90 % confidence interval nearer zero
// (the upper end for a fall, the lower for a rise), per day: Sen's
// interval of the Theil–Sen slope, as wide as the Mann–Kendall test
// corrected for autocorrelation makes it (stats.TheilSenLimit). A rule
// compares it with its threshold: the trend is then at least as steep as
// the threshold with 95 % confidence, not only there. When the interval
// holds zero it is of the other sign than Slope. ok is false for a fit
// that is not OK.
//
// Why: a test that a trend exists and a fitted slope past the threshold
// let a healthy host's wander through. The correction for autocorrelation,
// estimated from the same few days, finds too little of it, so a drift of
// 2.5 standard deviations of the noise reads as p < 0.001; when that drift
// passed 2 % of memory, available_memory_decline named it (9 of 3,732
// healthy generated hosts booted 3 to 7 days before the end, seeds 1 to 3,
// data ending at 00:00, 02:30, 12:00 and 19:00). Asking that the drop
// stand out from the noise by the threshold, not only from zero, named
// none of them. The cost is at the threshold: a leak of 1 % of memory a
// day, 3.5 % over a boot of 3.5 days, was named on 85 hosts of 120 (111
// before), a day later on 117 (120), two days later on all; from 1.5 % a
// day nothing changed (119 and 120 of 120). The 90 % interval, not the
// 99 % one whose ends match the test at p < 0.01: that one named a leak of
// 1 % a day on 41 hosts of 120 and missed one of 2 % a day; an 80 %
// interval named 98 but also one of the healthy hosts. Estimating the
// correlation from the boot before instead (a week of the same noise)
// did not help: it, too, found a factor near 22 where about 30 is right
// at that spacing, and still named 8 of the 3,732.
//
// It costs a selection among the pairwise slopes, as much as the slope
// itself (O(n log n), about 1.4 ms for 1,000 points), so rules call it
// only for a fit that passes their cheaper tests.
func (f fit) Limit() (float64, bool) {
	if !f.OK {
		return math.NaN(), false
	}
	return stats.TheilSenLimit(f.xs, f.ys, trendLimitAlpha, f.varS, f.Slope < 0)
}

// fitTrend fits points (time in days), thinned to maxFitPoints: over two
// days or more of points at least every three hours the daily cycle is
// removed first (stats.RemoveCycle, a 24-hour and a 12-hour harmonic
// fitted with the line); then the
// Theil–Sen slope, and the Mann–Kendall test with its variance corrected
// for the autocorrelation of the points about that slope
// (stats.MannKendallHamedRao).
//
// Why: memory gauges cycle daily and wander for hours. A cycle cut at any
// phase leans a fitted line (by up to twice its amplitude over the number
// of days, a few per cent of memory over a boot of three days), and the
// plain test reads a few hours of wander as hundreds of agreeing pairs
// (p < 1e-20 for a healthy host's drift). On 3,732 healthy generated
// hosts booted 3 to 7 days before the end (internal/fleettest: a cycle of
// ±4 % of memory, noise that wanders for hours, 5-minute samples) the
// plain fit called 118 declining. The correction alone, the cycle left
// in, called none, but it counts the cycle as correlation and loses real
// leaks: 3 % of memory a day 3.5 days after a boot was named on 80 hosts
// of 120 (all before), and a fleet's leaking host (6 % over 10.5 days)
// not at all. With the cycle removed too, 11 of the 3,732 were called
// declining (9 on a later measure), and leaks are named as before (from
// 1.5 % a day on 119 of 120 at 3.5 days). Those are hosts whose noise
// drifted 2 % of memory over three days, about 2.5 standard deviations of
// its wander: the correction estimates the correlation from the same few
// days and finds too little of it (a variance 24 times the independent
// one where about 60 is right), so such a drift still reads as
// p < 0.001. Rules therefore ask Limit whether the drop passes their
// threshold with confidence too, which names none of them.
// Trimming the segment to whole days does not help: the lean depends on
// the phase the cycle starts at, not on a broken day (it tripled these
// false positives).
func fitTrend(ps []sample.Point) fit {
	xs, ys := model.XY(ps, maxFitPoints)
	if len(xs) < 4 {
		return fit{}
	}
	if span := xs[len(xs)-1] - xs[0]; span >= cycleMinDays && float64(len(xs)) >= cycleMinPerDay*span {
		ys = stats.RemoveCycle(xs, ys, 1, 2)
	}
	slope, icept, ok := stats.TheilSen(xs, ys)
	if !ok {
		return fit{}
	}
	resid := make([]float64, len(ys))
	for i := range ys {
		resid[i] = ys[i] - slope*xs[i]
	}
	mk, _ := stats.MannKendallHamedRao(ys, resid)
	if !mk.OK {
		return fit{}
	}
	return fit{Slope: slope, Intercept: icept, P: mk.P, N: len(xs), OK: true, xs: xs, ys: ys, varS: mk.VarS}
}

// fitTrend removes the daily cycle over cycleMinDays or more (over less, a
// cycle and a trend are hard to tell apart) from points at least
// cycleMinPerDay a day (fewer do not resolve a 12-hour harmonic, and a
// series of daily values, such as dying_cgroups' daily floors, has no
// cycle to remove).
const (
	cycleMinDays   = 2
	cycleMinPerDay = 8
)

// The shortest time range and the fewest points a trend is fitted on, and
// the most points a fit reads (thinned beyond).
const (
	declineMinSpan   = 6 * time.Hour
	declineMinPoints = 12
	maxFitPoints     = 1000
)

// procMinSpan is the shortest run of a process whose growth is judged
// (process_memory_growth, process_leak).
const procMinSpan = time.Hour

// stepOf is a window's step in milliseconds (5 minutes when unset).
func stepOf(w *sample.Window) int64 {
	if w.Step > 0 {
		return w.Step.Milliseconds()
	}
	return (5 * time.Minute).Milliseconds()
}
