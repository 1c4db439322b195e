package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var nan = math.NaN()

func inf(sign int) float64 { return math.Inf(sign) }

// near reports whether got is within tol of want (relative for large
// values), treating two NaNs and equal infinities as equal.
func near(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		// Type 7: h = (n−1)q, x[⌊h⌋] + (h−⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]).
		{"min", []float64{3, 1, 2}, 0, 1},
		{"max", []float64{3, 1, 2}, 1, 3},
		{"odd median", []float64{5, 1, 4, 2, 3}, 0.5, 3},
		{"even median", []float64{4, 1, 3, 2}, 0.5, 2.5},
		// h = 3·0.25 = 0.75 → 1 + 0.75·(2−1).
		{"q25 of 1..4", []float64{1, 2, 3, 4}, 0.25, 1.75},
		// h = 3·0.9 = 2.7 → 3 + 0.7·(4−3); numpy.quantile([1,2,3,4], .9) = 3.7.
		{"q90 of 1..4", []float64{4, 3, 2, 1}, 0.9, 3.7},
		// h = 4·0.1 = 0.4 → 10 + 0.4·10.
		{"q10 of 10..50", []float64{50, 10, 40, 20, 30}, 0.1, 14},
		{"NaN ignored", []float64{nan, 1, nan, 3}, 0.5, 2},
		{"single", []float64{7}, 0.3, 7},
		{"ties", []float64{2, 2, 2, 1, 2}, 0.25, 2},
		{"+Inf is the max", []float64{1, 2, inf(1)}, 1, inf(1)},
		{"Inf beside equal", []float64{inf(1), inf(1)}, 0.5, inf(1)},
		{"-Inf and +Inf", []float64{inf(-1), inf(1)}, 0.5, nan},
		{"empty", nil, 0.5, nan},
		{"all NaN", []float64{nan, nan}, 0.5, nan},
		{"q < 0", []float64{1, 2}, -0.1, nan},
		{"q > 1", []float64{1, 2}, 1.1, nan},
		{"q NaN", []float64{1, 2}, nan, nan},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.xs)
		if got := Quantile(in, tt.q); !near(got, tt.want, 1e-12) {
			t.Errorf("%s: Quantile(%v, %v) = %v, want %v", tt.name, tt.xs, tt.q, got, tt.want)
		}
		if !slices.EqualFunc(in, tt.xs, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
			t.Errorf("%s: input modified: %v", tt.name, in)
		}
	}
}

func TestQuantileMatchesSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 500 {
		n := 1 + rng.IntN(60)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(rng.IntN(10)) // many ties
			if iter%2 == 1 {
				xs[i] = rng.NormFloat64()
			}
		}
		s := slices.Clone(xs)
		slices.Sort(s)
		for _, q := range []float64{0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1} {
			h := float64(n-1) * q
			j := int(math.Floor(h))
			want := s[j]
			if j+1 < n {
				want += (h - float64(j)) * (s[j+1] - s[j])
			}
			if got := Quantile(xs, q); !near(got, want, 1e-12) {
				t.Fatalf("Quantile(%v, %v) = %v, want %v", xs, q, got, want)
			}
		}
	}
}

func TestSelectKAdversarial(t *testing.T) {
	t.Parallel()
	// Sorted, reversed, constant, organ-pipe and sawtooth inputs.
	n := 10001
	gens := map[string]func(i int) float64{
		"sorted":   func(i int) float64 { return float64(i) },
		"reversed": func(i int) float64 { return float64(n - i) },
		"constant": func(int) float64 { return 1 },
		"organ":    func(i int) float64 { return float64(min(i, n-i)) },
		"saw":      func(i int) float64 { return float64(i % 7) },
	}
	for name, g := range gens {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = g(i)
		}
		s := slices.Clone(xs)
		slices.Sort(s)
		for _, k := range []int{0, 1, n / 3, n / 2, n - 2, n - 1} {
			a := slices.Clone(xs)
			selectK(a, k)
			if a[k] != s[k] {
				t.Fatalf("%s: selectK k=%d: %v, want %v", name, k, a[k], s[k])
			}
			if slices.Max(a[:k+1]) != a[k] || slices.Min(a[k:]) != a[k] {
				t.Fatalf("%s: selectK k=%d did not partition", name, k)
			}
		}
	}
}

func TestMedianMAD(t *testing.T) {
	t.Parallel()
	tests := []struct {
		xs          []float64
		median, mad float64
	}{
		// Median 2; |x−2| = 1 1 0 0 2 4 7 → median 1.
		{[]float64{1, 1, 2, 2, 4, 6, 9}, 2, 1},
		// Median 3.5; |x−3.5| = 2.5 1.5 .5 .5 1.5 96.5 → sorted .5 .5 1.5 1.5
		// 2.5 96.5 → median 1.5.
		{[]float64{1, 2, 3, 4, 5, 100}, 3.5, 1.5},
		{[]float64{5}, 5, 0},
		{[]float64{nan, 4, nan, 8}, 6, 2},
		// One infinite value is one infinite deviation.
		{[]float64{1, 2, 3, inf(1)}, 2.5, 1},
		// Median +Inf: every deviation is NaN or Inf.
		{[]float64{1, inf(1), inf(1)}, inf(1), inf(1)},
		{[]float64{inf(1)}, inf(1), nan},
		{nil, nan, nan},
	}
	for _, tt := range tests {
		if got := Median(tt.xs); !near(got, tt.median, 1e-12) {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.median)
		}
		if got := MAD(tt.xs); !near(got, tt.mad, 1e-12) {
			t.Errorf("MAD(%v) = %v, want %v", tt.xs, got, tt.mad)
		}
	}
}

func TestSpecial(t *testing.T) {
	t.Parallel()
	// Closed forms of the regularized incomplete beta function.
	for _, x := range []float64{1e-9, 0.01, 0.2, 0.5, 0.73, 0.99, 1 - 1e-9} {
		for _, a := range []float64{0.5, 1, 2.5, 10, 300} {
			if got, want := regIncBeta(a, 1, x), math.Pow(x, a); !near(got, want, 1e-12) {
				t.Errorf("I_%v(%v, 1) = %v, want x^a = %v", x, a, got, want)
			}
			if got, want := regIncBeta(1, a, x), -math.Expm1(a*math.Log1p(-x)); !near(got, want, 1e-12) {
				t.Errorf("I_%v(1, %v) = %v, want 1−(1−x)^b = %v", x, a, got, want)
			}
		}
		// asin is ill-conditioned near 1, so use the symmetric form there.
		want := 2 / math.Pi * math.Asin(math.Sqrt(x))
		if x > 0.5 {
			want = 1 - 2/math.Pi*math.Asin(math.Sqrt(1-x))
		}
		if got := regIncBeta(0.5, 0.5, x); !near(got, want, 1e-12) {
			t.Errorf("I_%v(1/2, 1/2) = %v, want 2/π·asin(√x) = %v", x, got, want)
		}
	}
	// Student t two-sided p-values with closed forms: df = 1 (Cauchy)
	// p = 1 − 2/π·atan|t|; df = 2: p = 1 − |t|/√(2+t²); df = 3:
	// p = 1 − 2/π·(θ + sinθ·cosθ), θ = atan(|t|/√3).
	for _, tv := range []float64{0, 0.1, 1, 2.5, 12.7, 300} {
		x1, x2, x3 := 1/(1+tv*tv), 2/(2+tv*tv), 3/(3+tv*tv)
		th := math.Atan(tv / math.Sqrt(3))
		checks := []struct {
			df, x, want float64
		}{
			{1, x1, 1 - 2/math.Pi*math.Atan(tv)},
			{2, x2, 1 - tv/math.Sqrt(2+tv*tv)},
			{3, x3, 1 - 2/math.Pi*(th+math.Sin(th)*math.Cos(th))},
		}
		for _, c := range checks {
			if got := tTwoSided(c.x, c.df); !near(got, c.want, 1e-10) {
				t.Errorf("t=%v df=%v: p = %v, want %v", tv, c.df, got, c.want)
			}
		}
	}
	// Known table values: t(0.975, 10) = 2.228138851986, so p = 0.05.
	if got := tTwoSided(10/(10+2.228138851986*2.228138851986), 10); !near(got, 0.05, 1e-9) {
		t.Errorf("t=2.2281 df=10: p = %v, want 0.05", got)
	}
	// A large df approaches the normal: p(t=1.96) ≈ 0.05.
	if got := tTwoSided(1e7/(1e7+1.959963984540054*1.959963984540054), 1e7); !near(got, 0.05, 1e-6) {
		t.Errorf("t=1.96 df=1e7: p = %v, want 0.05", got)
	}
	if got := normalQuantile(0.975); !near(got, 1.959963984540054, 1e-14) {
		t.Errorf("Φ⁻¹(0.975) = %v", got)
	}
	if got := normalQuantile(0.9); !near(got, 1.2815515655446004, 1e-14) {
		t.Errorf("Φ⁻¹(0.9) = %v", got)
	}
	if got := 2 * normalSF(1.959963984540054); !near(got, 0.05, 1e-14) {
		t.Errorf("2(1−Φ(1.96)) = %v", got)
	}
}
