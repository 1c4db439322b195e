package stats

import (
	"cmp"
	"math"
	"slices"
)

// Pearson returns the Pearson product-moment correlation of x and y,
//
//	r = Σ(x−x̄)(y−ȳ) / √(Σ(x−x̄)² · Σ(y−ȳ)²),
//
// and the two-sided p-value of the null hypothesis r = 0 from Student's t
// distribution: t = r·√((n−2)/(1−r²)) with n−2 degrees of freedom, so
// p = I_{1−r²}((n−2)/2, 1/2) (regularized incomplete beta). The p-value
// assumes independent pairs and roughly normal data; for skewed data or
// outliers prefer Spearman.
//
// Pairs where x or y is not finite (NaN marks a missing sample) are
// dropped. ok is false, and r and p are NaN, when fewer than 3 pairs remain
// or either variable is constant. It panics if len(x) != len(y).
//
// Complexity: O(n) time, O(n) scratch space; the sums are centred on the
// means (two passes) to avoid cancellation.
func Pearson(x, y []float64) (r, p float64, ok bool) {
	a, b := finitePairs(x, y)
	return pearson(a, b)
}

// Spearman returns Spearman's rank correlation ρ of x and y — the Pearson
// correlation of their ranks, where tied values get the average of the
// ranks they span — and its two-sided p-value from the same t approximation
// as Pearson (t = ρ·√((n−2)/(1−ρ²)), n−2 degrees of freedom), which is
// reasonable from n ≈ 10.
//
// Pairs where x or y is NaN are dropped; ±Inf rank as extreme values. ok is
// false, and rho and p are NaN, when fewer than 3 pairs remain or either
// variable is constant. It panics if len(x) != len(y).
//
// Complexity: O(n log n) time (ranking sorts), O(n) space.
func Spearman(x, y []float64) (rho, p float64, ok bool) {
	a, b := keptPairs(x, y, notNaN)
	return pearson(ranks(a), ranks(b))
}

func pearson(x, y []float64) (r, p float64, ok bool) {
	n := len(x)
	if n < 3 {
		return math.NaN(), math.NaN(), false
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, syy, sxy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxx += dx * dx
		syy += dy * dy
		sxy += dx * dy
	}
	if sxx == 0 || syy == 0 || math.IsInf(sxx, 0) || math.IsInf(syy, 0) {
		return math.NaN(), math.NaN(), false
	}
	r = sxy / math.Sqrt(sxx*syy)
	r = math.Max(-1, math.Min(1, r))
	return r, corrP(r, n), true
}

// corrP is the two-sided t-test p-value of a correlation r from n pairs:
// with df = n−2 and t² = r²·df/(1−r²), df/(df+t²) = 1−r².
func corrP(r float64, n int) float64 {
	return tTwoSided(1-r*r, float64(n-2))
}

// ranks returns the 1-based ranks of a (NaN-free), ties getting the mean of
// the ranks they span.
func ranks(a []float64) []float64 {
	idx := make([]int, len(a))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int { return cmp.Compare(a[i], a[j]) })
	out := make([]float64, len(a))
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && a[idx[j]] == a[idx[i]] {
			j++
		}
		// Positions i..j−1 hold ranks i+1..j; their mean is (i+1+j)/2.
		r := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			out[idx[k]] = r
		}
		i = j
	}
	return out
}
