package diagnose

import (
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
}

// fitTrend fits points (time in days), thinned to maxFitPoints.
func fitTrend(ps []sample.Point) fit {
	xs, ys := model.XY(ps, maxFitPoints)
	if len(xs) < 4 {
		return fit{}
	}
	slope, icept, ok := stats.TheilSen(xs, ys)
	if !ok {
		return fit{}
	}
	mk := stats.MannKendall(ys)
	if !mk.OK {
		return fit{}
	}
	return fit{Slope: slope, Intercept: icept, P: mk.P, N: len(xs), OK: true}
}

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
