package model

import (
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// DailyPeaks returns the largest of vals (one per point) per UTC day of
// the points' times, in day order. A point at exactly midnight is the
// boundary of two days: it counts for both where they have points of their
// own, and makes no day of its own next to one (a range that ends or starts
// at midnight, such as one read through Prometheus, whose last step is
// there, does not get a day of one point). A day is then what a Prometheus
// range [1d] at midnight reads (the fleet scan's daily values), and a
// recording that starts at midnight has no day before its first.
func DailyPeaks(ps []sample.Point, vals []float64) (days []int64, peaks []float64) {
	const day = int64(24 * time.Hour / time.Millisecond)
	has := map[int64]bool{} // days with a point inside, not at midnight
	for _, p := range ps {
		if p.T%day != 0 {
			has[floorDiv(p.T, day)] = true
		}
	}
	byDay := map[int64]float64{}
	put := func(d int64, v float64) {
		if cur, ok := byDay[d]; !ok || v > cur {
			byDay[d] = v
		}
	}
	for i, p := range ps {
		d := floorDiv(p.T, day)
		if p.T%day != 0 {
			put(d, vals[i])
			continue
		}
		// Midnight: the day it opens and the one it closes.
		if has[d] {
			put(d, vals[i])
		}
		if has[d-1] {
			put(d-1, vals[i])
		}
		if !has[d] && !has[d-1] {
			put(d, vals[i]) // no neighbour: a day of its own
		}
	}
	for d := range byDay {
		days = append(days, d)
	}
	sort.Slice(days, func(i, j int) bool { return days[i] < days[j] })
	for _, d := range days {
		peaks = append(peaks, byDay[d])
	}
	return days, peaks
}

// floorDiv is a/b rounded down (times before 1970 are negative).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
