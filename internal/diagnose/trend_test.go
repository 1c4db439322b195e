package diagnose

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// wanderingGauge is n points five minutes apart of a 64 GiB host's
// available memory: a daily cycle of ±4 % of memory, noise that wanders
// for hours (AR(1), φ = 0.97, about 1 % of memory) and a fall of
// perDay bytes a day.
func wanderingGauge(seed uint64, n int, perDay float64) []sample.Point {
	const total = 64 << 30
	r := rand.New(rand.NewPCG(seed, 1))
	ps := make([]sample.Point, n)
	t0 := time.Date(2026, 11, 20, 3, 0, 0, 0, time.UTC).UnixMilli()
	var ar float64
	for i := range ps {
		t := t0 + int64(i)*(5*time.Minute).Milliseconds()
		days := float64(t-t0) / float64(24*time.Hour/time.Millisecond)
		ar = 0.97*ar + 0.0025*r.NormFloat64()
		ps[i] = sample.Point{T: t, V: total*(0.5+0.04*math.Sin(2*math.Pi*days)+ar) - perDay*days}
	}
	return ps
}

// Limit is the end of the slope's interval nearer zero: between zero and
// the slope for a clear fall or rise, of the other sign for a slope the
// noise could have made, and not ok for a fit that is not.
func TestFitLimit(t *testing.T) {
	fall := fitTrend(wanderingGauge(1, 1000, 4<<30))
	lim, ok := fall.Limit()
	if !ok || !(fall.Slope < lim && lim < 0) {
		t.Errorf("a fall of 4 GiB a day: slope %.4g, limit %.4g (%v), want the limit between the slope and 0", fall.Slope, lim, ok)
	}
	rise := fitTrend(wanderingGauge(2, 1000, -4<<30))
	if lim, ok := rise.Limit(); !ok || !(0 < lim && lim < rise.Slope) {
		t.Errorf("a rise of 4 GiB a day: slope %.4g, limit %.4g (%v), want the limit between 0 and the slope", rise.Slope, lim, ok)
	}
	flat := fitTrend(wanderingGauge(3, 1000, 0))
	if lim, ok := flat.Limit(); !ok || lim*flat.Slope >= 0 {
		t.Errorf("no trend: slope %.4g, limit %.4g (%v), want a limit of the other sign", flat.Slope, lim, ok)
	}
	if lim, ok := fitTrend(wanderingGauge(4, 3, 0)).Limit(); ok || !math.IsNaN(lim) {
		t.Errorf("three points: limit %v (%v), want NaN, not ok", lim, ok)
	}
}

// BenchmarkFitTrend: a trend fit of 1,000 points (the most a rule reads)
// of a wandering gauge with a daily cycle, and the limit of its slope's
// interval that a rule asks for when the fit passes its other tests.
func BenchmarkFitTrend(b *testing.B) {
	ps := wanderingGauge(5, 1000, 1<<30)
	b.Run("Fit", func(b *testing.B) {
		for b.Loop() {
			fitTrend(ps)
		}
	})
	f := fitTrend(ps)
	b.Run("Limit", func(b *testing.B) {
		for b.Loop() {
			f.Limit()
		}
	})
}

// A process of 1 GiB whose USS wanders for hours (AR(1), φ = 0.97 a
// 5-minute sample, about 24 MiB), over two days, growing 40 MiB a day:
// under process_memory_growth's 5 % of its size a day (about 54 MiB), but
// its fitted growth passed that on 27 of 300 runs before the rule asked
// for it with confidence (Limit), on 1 now. Growth of 100 and 150 MiB a
// day, twice the threshold and more, is named as before (299 and 300 of
// 300 before, 285 and 300 now); just past it, 60 MiB a day, 45 of 300
// where 173 were, named as the growth goes on.
func TestProcessGrowthUnderThresholdQuiet(t *testing.T) {
	const runs, n = 300, 576
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	window := func(r *rand.Rand, perDay float64) *sample.Window {
		s := &sample.Series{Name: "memdoctor_process_uss_bytes", Labels: sample.L("comm", "app", "pid", "4242")}
		var ar float64
		for i := range n {
			ar = 0.97*ar + 6e6*r.NormFloat64()
			days := float64(i) / 288
			s.Points = append(s.Points, sample.Point{T: t0.Add(time.Duration(i) * 5 * time.Minute).UnixMilli(), V: 1<<30 + ar + perDay*days})
		}
		w := &sample.Window{From: t0, To: t0.Add(time.Duration(n-1) * 5 * time.Minute), Step: 5 * time.Minute}
		w.Add(s)
		return w
	}
	for _, c := range []struct {
		mib      float64 // a day
		min, max int     // runs named
	}{
		{40, 0, runs * 3 / 100},
		{100, runs * 9 / 10, runs},
		{150, runs, runs},
	} {
		r := rand.New(rand.NewPCG(21, uint64(c.mib)))
		named := 0
		for range runs {
			if fs := (processMemoryGrowth{}).Eval(&Input{Window: window(r, c.mib*(1<<20))}); len(fs) > 0 {
				named++
			}
		}
		t.Logf("growth of %.0f MiB a day through the wander: named in %d of %d runs", c.mib, named, runs)
		if named < c.min || named > c.max {
			t.Errorf("growth of %.0f MiB a day: named in %d of %d runs, want %d to %d", c.mib, named, runs, c.min, c.max)
		}
	}
}
