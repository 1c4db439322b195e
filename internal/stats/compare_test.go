package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pT3 is the two-sided p-value of Student's t with 3 degrees of freedom:
// 1 − 2/π·(θ + sinθ·cosθ), θ = atan(|t|/√3).
func pT3(t float64) float64 {
	th := math.Atan(math.Abs(t) / math.Sqrt(3))
	return 1 - 2/math.Pi*(th+math.Sin(th)*math.Cos(th))
}

func TestPearson(t *testing.T) {
	t.Parallel()
	// x 1..5, y 2 4 5 4 5: deviations dx −2 −1 0 1 2, dy −2 0 1 0 1;
	// Σdxdy = 6, Σdx² = 10, Σdy² = 6 → r = 6/√60 = 0.7745967.
	// t = r·√(3/(1−.6)) = 2.1213203, df 3 → p = 0.1240271.
	r, p, ok := Pearson([]float64{1, 2, 3, 4, 5}, []float64{2, 4, 5, 4, 5})
	if !ok || !near(r, 6/math.Sqrt(60), 1e-14) || !near(p, 0.12402706265755448, 1e-10) || !near(p, pT3(2.121320343559643), 1e-10) {
		t.Errorf("Pearson = %v, %v, %v; want 0.7745967, 0.1240271", r, p, ok)
	}
	// Perfect negative line: r = −1, p = 0. NaN and Inf pairs dropped.
	r, p, ok = Pearson([]float64{1, 2, nan, 3, 4, 5}, []float64{10, 8, 0, 6, inf(1), 2})
	if !ok || r != -1 || p != 0 {
		t.Errorf("Pearson(line) = %v, %v, %v; want -1, 0", r, p, ok)
	}
	// Invariant to a huge offset (Unix milliseconds) thanks to centring.
	r, _, _ = Pearson([]float64{1.7e12 + 1, 1.7e12 + 2, 1.7e12 + 3, 1.7e12 + 4, 1.7e12 + 5}, []float64{2, 4, 5, 4, 5})
	if !near(r, 6/math.Sqrt(60), 1e-9) {
		t.Errorf("Pearson with offset x = %v", r)
	}
	for _, c := range [][2][]float64{
		{{1, 2}, {1, 2}},                // too few
		{{1, 2, 3}, {5, 5, 5}},          // constant y
		{{1, 1, 1}, {1, 2, 3}},          // constant x
		{{1, nan, 3}, {1, 2, 3}},        // too few after NaN
		{{1e300, -1e300, 0}, {1, 2, 3}}, // Σdx² overflows
	} {
		if r, p, ok := Pearson(c[0], c[1]); ok || !math.IsNaN(r) || !math.IsNaN(p) {
			t.Errorf("Pearson(%v, %v) = %v, %v, %v; want NaN, NaN, false", c[0], c[1], r, p, ok)
		}
	}
}

func TestSpearman(t *testing.T) {
	t.Parallel()
	// y 1 3 2 2 5 ranks 1 4 2.5 2.5 5 (the tied 2s share ranks 2 and 3);
	// x ranks 1..5. Deviations from 3: −2 −1 0 1 2 and −2 1 −.5 −.5 2;
	// Σ = 4 − 1 + 0 − .5 + 4 = 6.5, Σdx² = 10, Σdy² = 9.5 → ρ = 6.5/√95 =
	// 0.6668859; t = ρ·√(3/(1−ρ²)) = 1.5501108, p = 0.2188940.
	rho, p, ok := Spearman([]float64{10, 20, 30, 40, 50}, []float64{1, 3, 2, 2, 5})
	if !ok || !near(rho, 6.5/math.Sqrt(95), 1e-14) || !near(p, 0.21889398131323157, 1e-10) || !near(p, pT3(1.5501108353584707), 1e-10) {
		t.Errorf("Spearman = %v, %v, %v; want 0.6668859, 0.2188940", rho, p, ok)
	}
	// Any monotonic transform is a perfect rank correlation, including
	// infinite values; NaN pairs are dropped.
	rho, p, ok = Spearman([]float64{1, 2, 3, nan, 4, 5}, []float64{inf(-1), math.Exp(2), math.Exp(3), 7, math.Exp(40), inf(1)})
	if !ok || rho != 1 || p != 0 {
		t.Errorf("Spearman(monotonic) = %v, %v, %v; want 1, 0", rho, p, ok)
	}
	if _, _, ok := Spearman([]float64{1, 2, 3}, []float64{4, 4, 4}); ok {
		t.Error("Spearman of a constant is ok")
	}
}

func TestRanks(t *testing.T) {
	t.Parallel()
	got := ranks([]float64{10, 30, 20, 30, 10, 30})
	// 10 10 → ranks 1, 2 → 1.5; 20 → 3; 30 30 30 → 4, 5, 6 → 5.
	want := []float64{1.5, 5, 3, 5, 1.5, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ranks = %v, want %v", got, want)
		}
	}
}

func mean(xs []float64) float64 {
	var s float64
	for _, v := range xs {
		s += v
	}
	return s / float64(len(xs))
}

func TestBootstrapDiff(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(42, 0))
	a := make([]float64, 200)
	b := make([]float64, 150)
	for i := range a {
		a[i] = 10 + 2*rng.NormFloat64()
	}
	for i := range b {
		b[i] = 9 + 2*rng.NormFloat64()
	}
	for name, stat := range map[string]func([]float64) float64{"mean": mean, "median": Median} {
		diff, lo, hi := BootstrapDiff(a, b, stat, 2000, 0.05, 1)
		t.Logf("%s: diff %v CI [%v, %v]", name, diff, lo, hi)
		if want := stat(a) - stat(b); diff != want {
			t.Errorf("%s: diff = %v, want stat(a)−stat(b) = %v", name, diff, want)
		}
		if !(lo < diff && diff < hi) || !(lo <= 1 && 1 <= hi) {
			t.Errorf("%s: CI [%v, %v] misses the estimate %v or the true difference 1", name, lo, hi, diff)
		}
		// The mean's standard error is 2·√(1/200 + 1/150) ≈ 0.216, so the 95 %
		// interval is about ±0.42 wide.
		if name == "mean" && (hi-lo < 0.6 || hi-lo > 1.1) {
			t.Errorf("mean: CI width %v, want about 0.85", hi-lo)
		}
		d2, lo2, hi2 := BootstrapDiff(a, b, stat, 2000, 0.05, 1)
		if d2 != diff || lo2 != lo || hi2 != hi {
			t.Errorf("%s: same seed, different result", name)
		}
		if _, lo3, hi3 := BootstrapDiff(a, b, stat, 2000, 0.05, 2); lo3 == lo && hi3 == hi {
			t.Errorf("%s: another seed gave the identical interval", name)
		}
	}
}

// Over independent samples the 90 % interval for the difference of means
// covers the true difference about 90 % of the time.
func TestBootstrapDiffCoverage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(90, 0))
	const trials = 200
	a := make([]float64, 60)
	b := make([]float64, 80)
	covered := 0
	for trial := range trials {
		for i := range a {
			a[i] = 5 + rng.NormFloat64()
		}
		for i := range b {
			b[i] = 3 + 1.5*rng.NormFloat64()
		}
		_, lo, hi := BootstrapDiff(a, b, mean, 500, 0.1, uint64(trial))
		if lo <= 2 && 2 <= hi {
			covered++
		}
	}
	rate := float64(covered) / trials
	t.Logf("coverage %v", rate)
	if rate < 0.83 || rate > 0.96 {
		t.Errorf("coverage %v, want about 0.90", rate)
	}
}

func TestBootstrapDiffEdges(t *testing.T) {
	t.Parallel()
	d, lo, hi := BootstrapDiff(nil, []float64{1}, mean, 100, 0.05, 1)
	if !math.IsNaN(d) || !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("empty a: %v %v %v", d, lo, hi)
	}
	d, lo, hi = BootstrapDiff([]float64{3, nan}, []float64{1}, mean, 0, 0.05, 1)
	if d != 2 || !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("no iterations: %v %v %v", d, lo, hi)
	}
	// Single values: every resample is the same, so the interval collapses.
	d, lo, hi = BootstrapDiff([]float64{3}, []float64{1}, mean, 50, 0.05, 1)
	if d != 2 || lo != 2 || hi != 2 {
		t.Errorf("single values: %v %v %v", d, lo, hi)
	}
}
