package diagnose_test

import (
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// baselineWindow is 16 days of hourly points, use 4 GiB of 16 each day,
// whose last day peaks at 6 GiB at 20:00; the range ends at end, with a
// last point there at the use of the day's start (as a Prometheus range's
// last step reads).
func baselineWindow(end time.Time) *sample.Window {
	const gib = 1 << 30
	total := &sample.Series{Name: "node_memory_MemTotal_bytes"}
	avail := &sample.Series{Name: "node_memory_MemAvailable_bytes"}
	lastDay := end.Add(-time.Nanosecond).Truncate(24 * time.Hour)
	for ts := end.Add(-16 * 24 * time.Hour); !ts.After(end); ts = ts.Add(time.Hour) {
		used := 4.0 * gib
		if !ts.Before(lastDay) && ts.Hour() == 20 {
			used = 6 * gib
		}
		total.Points = append(total.Points, sample.Point{T: ts.UnixMilli(), V: 16 * gib})
		avail.Points = append(avail.Points, sample.Point{T: ts.UnixMilli(), V: 16*gib - used})
	}
	w := &sample.Window{}
	w.Add(total)
	w.Add(avail)
	return w
}

// TestBaselineDayEndsAtMidnight: the last day's excess fires whether the
// range ends at 23:00 or exactly at midnight, where the last point (at
// 00:00) closes that day instead of opening a day of one quiet point (the
// rule once missed the excess there, read through Prometheus); a range
// starting at midnight has no day of one point before its first.
func TestBaselineDayEndsAtMidnight(t *testing.T) {
	t.Parallel()
	mid := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	for _, end := range []time.Time{mid.Add(-time.Hour), mid} {
		w := baselineWindow(end)
		r := diagnose.Run(diagnose.Data{Window: w, Source: "test"})
		fired := false
		for _, f := range r.Findings {
			fired = fired || f.ID == "memory_baseline_exceeded"
		}
		if !fired {
			t.Errorf("range ending %s: memory_baseline_exceeded does not fire on a 50%% excess; findings %+v, notes %+v", end.Format(time.RFC3339), r.Findings, r.Notes)
		}
	}
	avail := baselineWindow(mid).Get("node_memory_MemAvailable_bytes")
	vals := make([]float64, len(avail.Points))
	for i, p := range avail.Points {
		vals[i] = -p.V
	}
	days, _ := model.DailyPeaks(avail.Points, vals)
	first, last := mid.Add(-16*24*time.Hour).Unix()/86400, mid.Add(-24*time.Hour).Unix()/86400
	if days[0] != first || days[len(days)-1] != last || len(days) != 16 {
		t.Errorf("days %d..%d (%d), want %d..%d (16): no day of one midnight point at either end", days[0], days[len(days)-1], len(days), first, last)
	}
}
