package stats

import "math"

// RemoveCycle returns ys less a periodic component: the least-squares fit
// of
//
//	y = a + b·x + Σ_{h=1}^{harmonics} (c_h·sin(2πhx/period) + d_h·cos(2πhx/period))
//
// is computed and its periodic terms (the c_h and d_h) are subtracted, so
// the level and the linear trend stay. The trend and the cycle are fitted
// together because a cycle cut at any phase correlates with time, over
// whole periods too: fitted alone, a line through a sine of amplitude A
// over P periods leans by up to about 2A/P over the span. Over less than a
// period a cycle and a trend cannot be told apart; the caller decides how
// many periods are enough.
//
// Points where x or y is not finite stay as they are and take no part in
// the fit. A copy of ys is returned when the fit is singular, harmonics <
// 1, period ≤ 0, or fewer than 2·harmonics+3 points remain. It panics if
// len(xs) != len(ys).
//
// Complexity: O(n·k²) time for k = 2·harmonics+2 terms.
func RemoveCycle(xs, ys []float64, period float64, harmonics int) []float64 {
	if len(xs) != len(ys) {
		panic("stats: xs and ys have different lengths")
	}
	out := append([]float64(nil), ys...)
	k := 2*harmonics + 2
	if harmonics < 1 || !(period > 0) {
		return out
	}
	// Centre x and y: the normal equations of raw times and byte counts
	// lose digits.
	var mx, my float64
	n := 0
	for i := range xs {
		if isFinite(xs[i]) && isFinite(ys[i]) {
			mx += xs[i]
			my += ys[i]
			n++
		}
	}
	if n < k+1 {
		return out
	}
	mx /= float64(n)
	my /= float64(n)
	terms := func(x float64, row []float64) {
		row[0] = 1
		row[1] = x - mx
		for h := 1; h <= harmonics; h++ {
			s, c := math.Sincos(2 * math.Pi * float64(h) * x / period)
			row[2*h], row[2*h+1] = s, c
		}
	}
	a := make([][]float64, k) // the normal equations, augmented
	for i := range a {
		a[i] = make([]float64, k+1)
	}
	row := make([]float64, k)
	for i := range xs {
		if !isFinite(xs[i]) || !isFinite(ys[i]) {
			continue
		}
		terms(xs[i], row)
		y := ys[i] - my
		for r := range k {
			for c := range k {
				a[r][c] += row[r] * row[c]
			}
			a[r][k] += row[r] * y
		}
	}
	coef, ok := solve(a)
	if !ok {
		return out
	}
	for i := range xs {
		if !isFinite(xs[i]) || !isFinite(ys[i]) {
			continue
		}
		terms(xs[i], row)
		for t := 2; t < k; t++ {
			out[i] -= coef[t] * row[t]
		}
	}
	return out
}

// solve solves the augmented k×(k+1) system a by Gaussian elimination with
// partial pivoting (a is overwritten); ok is false when it is singular.
func solve(a [][]float64) ([]float64, bool) {
	k := len(a)
	var scale float64
	for r := range a {
		for c := range k {
			scale = math.Max(scale, math.Abs(a[r][c]))
		}
	}
	if scale == 0 {
		return nil, false
	}
	for c := range k {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) <= 1e-12*scale {
			return nil, false
		}
		a[c], a[p] = a[p], a[c]
		for r := c + 1; r < k; r++ {
			f := a[r][c] / a[c][c]
			for j := c; j <= k; j++ {
				a[r][j] -= f * a[c][j]
			}
		}
	}
	x := make([]float64, k)
	for r := k - 1; r >= 0; r-- {
		s := a[r][k]
		for j := r + 1; j < k; j++ {
			s -= a[r][j] * x[j]
		}
		x[r] = s / a[r][r]
	}
	return x, true
}
