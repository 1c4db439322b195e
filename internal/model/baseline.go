package model

import "github.com/memdoctor/memdoctor/internal/stats"

// BaselineDays is how many daily peaks the baseline takes at most.
const BaselineDays = 14

// BaselineOf is the usual daily peak before the last day: the median of
// up to BaselineDays peaks before it, and how many it took.
func BaselineOf(peaks []float64) (median float64, days int) {
	if len(peaks) < 2 {
		return 0, 0
	}
	prev := peaks[max(0, len(peaks)-1-BaselineDays) : len(peaks)-1]
	return stats.Median(prev), len(prev)
}
