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
