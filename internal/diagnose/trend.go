package diagnose

import (
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
	xs, ys := xy(ps, maxFitPoints)
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
