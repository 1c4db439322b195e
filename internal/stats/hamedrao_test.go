package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ar1 is n values of an AR(1) process y_t = φ·y_{t−1} + e_t (e standard
// normal), started from its stationary distribution, plus slope·t.
func ar1(r *rand.Rand, n int, phi, slope float64) []float64 {
	y := make([]float64, n)
	v := r.NormFloat64() / math.Sqrt(1-phi*phi)
	for i := range y {
		v = phi*v + r.NormFloat64()
		y[i] = v + slope*float64(i)
	}
	return y
}

// detrend is ys less their Theil–Sen line (time = index).
func detrend(ys []float64) []float64 {
	xs := make([]float64, len(ys))
	for i := range xs {
		xs[i] = float64(i)
	}
	s, _, _ := TheilSen(xs, ys)
	out := make([]float64, len(ys))
	for i := range ys {
		out[i] = ys[i] - s*xs[i]
	}
	return out
}

// TestMannKendallHamedRaoCalibrated: on series without a trend, P < 0.01
// must happen about 1 % of the time. Plain Mann–Kendall on autocorrelated
// series is far off; the corrected test is near, and stays near where
// there is nothing to correct.
func TestMannKendallHamedRaoCalibrated(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 1))
	const runs = 400
	for _, c := range []struct {
		phi                float64
		plainMin, hrMax    float64 // shares of runs with P < 0.01
		factorLo, factorHi float64 // the median factor's range
	}{
		{0, 0, 0.03, 1, 1.3},
		{0.6, 0.08, 0.04, 2.5, 4.5},
		{0.9, 0.3, 0.06, 8, 19},
	} {
		var plain, hr int
		factors := make([]float64, 0, runs)
		for range runs {
			y := ar1(r, 500, c.phi, 0)
			if MannKendall(y).P < 0.01 {
				plain++
			}
			mk, f := MannKendallHamedRao(y, detrend(y))
			if mk.P < 0.01 {
				hr++
			}
			factors = append(factors, f)
		}
		ps, hs, f := float64(plain)/runs, float64(hr)/runs, Median(factors)
		t.Logf("φ=%.1f: P < 0.01 in %.1f %% of the runs plain, %.1f %% corrected; median factor %.2f (AR(1) theory (1+φ)/(1−φ) = %.2f)", c.phi, 100*ps, 100*hs, f, (1+c.phi)/(1-c.phi))
		if ps < c.plainMin {
			t.Errorf("φ=%.1f: plain Mann–Kendall rejected %.1f %% of the runs, want ≥ %.0f %% (the case no longer shows the problem)", c.phi, 100*ps, 100*c.plainMin)
		}
		if hs > c.hrMax {
			t.Errorf("φ=%.1f: the corrected test rejected %.1f %% of the runs without a trend, want ≤ %.0f %%", c.phi, 100*hs, 100*c.hrMax)
		}
		if f < c.factorLo || f > c.factorHi {
			t.Errorf("φ=%.1f: median factor %.2f, want in [%.1f, %.1f]", c.phi, f, c.factorLo, c.factorHi)
		}
	}
}

// TestMannKendallHamedRaoKeepsTrends: a real trend through autocorrelated
// noise stays significant, with the same S and Tau as MannKendall.
func TestMannKendallHamedRaoKeepsTrends(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(8, 1))
	y := ar1(r, 500, 0.9, 0.05) // 25 over the series; the noise's sd is 2.3
	plain := MannKendall(y)
	mk, f := MannKendallHamedRao(y, detrend(y))
	if mk.S != plain.S || mk.Tau != plain.Tau || mk.N != plain.N {
		t.Errorf("S, Tau, N %d %v %d, want MannKendall's %d %v %d", mk.S, mk.Tau, mk.N, plain.S, plain.Tau, plain.N)
	}
	if f <= 1 || math.Abs(mk.VarS-plain.VarS*f) > 1e-9*mk.VarS || mk.P <= plain.P {
		t.Errorf("factor %v, VarS %v (plain %v), P %v (plain %v): want VarS×factor and a larger P", f, mk.VarS, plain.VarS, mk.P, plain.P)
	}
	if mk.P > 1e-6 {
		t.Errorf("P %v, want < 1e-6 for a trend of 25 through noise of sd 2.3", mk.P)
	}
}

// TestMannKendallHamedRaoNothingToCorrect: negatively autocorrelated
// residuals give factor 1 (the test is never made more confident), NaN
// pairs are dropped, and a length mismatch panics.
func TestMannKendallHamedRaoNothingToCorrect(t *testing.T) {
	t.Parallel()
	y := make([]float64, 60)
	for i := range y {
		y[i] = float64(i%2) + 0.01*float64(i)
	}
	mk, f := MannKendallHamedRao(y, detrend(y))
	if plain := MannKendall(y); f != 1 || mk != plain {
		t.Errorf("alternating: factor %v, %+v; want 1 and MannKendall's %+v", f, mk, plain)
	}
	nan := math.NaN()
	withNaN, _ := MannKendallHamedRao([]float64{1, nan, 2, 3, 4, 5}, []float64{0, 0, nan, 0, 0, 0})
	if want := MannKendall([]float64{1, 3, 4, 5}); withNaN != want {
		t.Errorf("NaN pairs: %+v, want %+v", withNaN, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("different lengths: no panic")
		}
	}()
	MannKendallHamedRao([]float64{1, 2, 3, 4}, []float64{1, 2, 3})
}

// BenchmarkFitParts: the parts of a trend fit on 1,000 points (what
// diagnose's fitTrend reads at most) of a wandering gauge with a daily
// cycle: the plain test, the corrected one, the cycle's removal, the
// slope and one limit of its interval.
func BenchmarkFitParts(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 1))
	y := ar1(r, 1000, 0.97, 0)
	xs := make([]float64, len(y))
	for i := range y {
		xs[i] = float64(i) / 288
		y[i] += 4 * math.Sin(2*math.Pi*xs[i])
	}
	res := detrend(y)
	b.Run("MannKendall", func(b *testing.B) {
		for b.Loop() {
			MannKendall(y)
		}
	})
	b.Run("MannKendallHamedRao", func(b *testing.B) {
		for b.Loop() {
			MannKendallHamedRao(y, res)
		}
	})
	b.Run("RemoveCycle", func(b *testing.B) {
		for b.Loop() {
			RemoveCycle(xs, y, 1, 2)
		}
	})
	b.Run("TheilSen", func(b *testing.B) {
		for b.Loop() {
			TheilSen(xs, y)
		}
	})
	mk, _ := MannKendallHamedRao(y, res)
	b.Run("TheilSenLimit", func(b *testing.B) {
		for b.Loop() {
			TheilSenLimit(xs, y, 0.1, mk.VarS, true)
		}
	})
}
