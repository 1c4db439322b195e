package stats

import (
	"math"
	"slices"
)

// MK is the result of the Mann–Kendall trend test (see MannKendall).
type MK struct {
	// N is the number of values tested (after dropping NaN).
	N int
	// S is Σ_{i<j} sign(y_j − y_i): positive for an increasing trend.
	S int64
	// VarS is the variance of S under the null hypothesis of no trend,
	// with the tie correction.
	VarS float64
	// Z is the continuity-corrected standard score of S.
	Z float64
	// P is the two-sided p-value of Z under the normal approximation.
	P float64
	// Tau is Kendall's τ-b between time and y, in [−1, 1].
	Tau float64
	// OK is false when fewer than 4 values remain; the other fields are then
	// zero (N, S) or NaN.
	OK bool
}

// MannKendall runs the Mann–Kendall test for a monotonic trend in ys, taken
// as equally spaced in time in slice order. The statistic and its null
// distribution are
//
//	S     = Σ_{i<j} sign(y_j − y_i)
//	Var S = [n(n−1)(2n+5) − Σ t(t−1)(2t+5)] / 18
//	Z     = (S − 1)/√Var S if S > 0,  0 if S = 0,  (S + 1)/√Var S if S < 0
//	P     = 2·(1 − Φ(|Z|))
//	Tau   = S / √(n₀ · (n₀ − n₁)),  n₀ = n(n−1)/2,  n₁ = Σ t(t−1)/2
//
// where t runs over the sizes of groups of equal values (the tie
// correction) and Φ is the standard normal CDF. Tau is Kendall's τ-b against
// time (time has no ties), so it reaches ±1 for a monotonic series even with
// ties. When every value is equal, Var S is 0 and the result is Z = 0,
// P = 1, Tau = 0.
//
// NaN values (missing samples) are dropped and the others keep their order;
// ±Inf compare as extreme values. OK is false for fewer than 4 values. The
// normal approximation is fair from n ≈ 10. The test assumes independent
// observations: positive autocorrelation, usual for gauges sampled often,
// makes P too small, so rules should downsample or demand a small P.
//
// Complexity: O(n log n) time and O(n) space — S is counted from the
// inversions found by a merge sort, not from the n² pairs.
func MannKendall(ys []float64) MK {
	y := dropNaN(ys)
	n := len(y)
	if n < 4 {
		return MK{N: n, VarS: math.NaN(), Z: math.NaN(), P: math.NaN(), Tau: math.NaN()}
	}
	sorted := slices.Clone(y)
	inv := sortCountInversions(sorted, make([]float64, n))
	tie := tieSumsSorted(sorted)
	pairs := int64(n) * int64(n-1) / 2
	s := pairs - tie.pairs - 2*inv

	nf := float64(n)
	r := MK{N: n, S: s, OK: true}
	r.VarS = (nf*(nf-1)*(2*nf+5) - tie.t2) / 18
	if r.VarS <= 0 {
		r.Z, r.P, r.Tau = 0, 1, 0
		return r
	}
	sd := math.Sqrt(r.VarS)
	switch {
	case s > 0:
		r.Z = float64(s-1) / sd
	case s < 0:
		r.Z = float64(s+1) / sd
	}
	r.P = 2 * normalSF(math.Abs(r.Z))
	p0 := float64(pairs)
	r.Tau = float64(s) / math.Sqrt(p0*(p0-float64(tie.pairs)))
	return r
}

// sortCountInversions sorts a (NaN-free) ascending with a bottom-up merge
// sort, using buf (len(buf) ≥ len(a)) as scratch, and returns the number of
// strict inversions: pairs i < j of the original order with a[i] > a[j].
// Equal values are merged left first, so ties are not counted.
func sortCountInversions(a, buf []float64) int64 {
	var inv int64
	n := len(a)
	src, dst := a, buf[:n]
	for width := 1; width < n; width *= 2 {
		for lo := 0; lo < n; lo += 2 * width {
			mid := min(lo+width, n)
			hi := min(lo+2*width, n)
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if src[j] < src[i] {
					// src[j] is smaller than every remaining left value.
					inv += int64(mid - i)
					dst[k] = src[j]
					j++
				} else {
					dst[k] = src[i]
					i++
				}
				k++
			}
			k += copy(dst[k:], src[i:mid])
			copy(dst[k:], src[j:hi])
		}
		src, dst = dst, src
	}
	if n > 0 && &src[0] != &a[0] {
		copy(a, src)
	}
	return inv
}
