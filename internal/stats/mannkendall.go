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
// makes P too small: MannKendallHamedRao corrects for it.
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
	r.score()
	p0 := float64(pairs)
	r.Tau = float64(s) / math.Sqrt(p0*(p0-float64(tie.pairs)))
	return r
}

// score sets Z and P from S and a positive VarS (continuity-corrected).
func (r *MK) score() {
	sd := math.Sqrt(r.VarS)
	r.Z = 0
	switch {
	case r.S > 0:
		r.Z = float64(r.S-1) / sd
	case r.S < 0:
		r.Z = float64(r.S+1) / sd
	}
	r.P = 2 * normalSF(math.Abs(r.Z))
}

// sortCountInversions sorts a (NaN-free) ascending with a bottom-up merge
// sort, using buf (len(buf) ≥ len(a)) as scratch, and returns the number of
// strict inversions: pairs i < j of the original order with a[i] > a[j].
// Equal values are merged left first, so ties are not counted.
func sortCountInversions[T int32 | float64](a, buf []T) int64 {
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

// MannKendallHamedRao is MannKendall with Var S corrected for
// autocorrelation after Hamed and Rao (1998, J. Hydrology 204). ys are the
// values tested, resid the same values with their trend removed (ys −
// slope·x, from a robust slope such as TheilSen), in the same order. With
// ρ_k the lag-k autocorrelation of the ranks of resid and m its length,
//
//	n/n* = 1 + 2/(m(m−1)(m−2)) · Σ_{k=1}^{K} (m−k)(m−k−1)(m−k−2) ρ_k
//
// and Var S is multiplied by it; Z and P follow from the corrected
// variance, S and Tau are unchanged. K is the last lag of the first run of
// significant autocorrelations: the sum stops at the first ρ_k inside
// ±Φ⁻¹(0.975)/√m. Hamed and Rao sum every significant lag instead, but the
// sample autocorrelations of m values add up to −1/2 whatever the truth,
// so the significant lags far out are mostly that bias and cancel much of
// the correlation that is there: on AR(1) series of 500 values with
// φ = 0.9 (n/n* ≈ 19), summing every significant lag gave a median factor
// of 6.2 and p < 0.01 on 14 % of series without a trend; stopping at the
// first insignificant lag (as Geyer's initial sequence does for the
// variance of a mean) gave 13.5 and 4.5 %. A factor below 1 is taken as
// 1, so the correction never makes a trend more significant than
// MannKendall finds it. It returns the result and the factor.
//
// Why: MannKendall counts every pair of points as independent evidence.
// A gauge sampled every few minutes wanders for hours, so n points carry
// the information of far fewer, and its P is smaller than the chance of
// such a drift by orders of magnitude. The correlations are estimated
// from the series itself, so a correlation that lasts a sizeable share of
// it is underestimated: average such a series into blocks first (see
// diagnose's fitTrend).
//
// NaN in ys or resid drop the pair. Complexity: O(m·K) for the
// autocorrelations, on top of MannKendall.
func MannKendallHamedRao(ys, resid []float64) (MK, float64) {
	y, e := keptPairs(ys, resid, notNaN)
	r := MannKendall(y)
	if !r.OK || r.VarS <= 0 {
		return r, 1
	}
	factor := hamedRaoFactor(e)
	if factor <= 1 {
		return r, 1
	}
	r.VarS *= factor
	r.score()
	return r, factor
}

// hamedRaoFactor is n/n* of MannKendallHamedRao for the residuals e
// (NaN-free).
func hamedRaoFactor(e []float64) float64 {
	m := len(e)
	if m < 4 {
		return 1
	}
	rk := ranks(e)
	mean := float64(m+1) / 2
	var c0 float64
	for i := range rk {
		rk[i] -= mean
		c0 += rk[i] * rk[i]
	}
	if c0 == 0 {
		return 1
	}
	bound := normalQuantile(0.975) / math.Sqrt(float64(m))
	var sum float64
	for k := 1; k <= m-3; k++ {
		var c float64
		for i := 0; i+k < m; i++ {
			c += rk[i] * rk[i+k]
		}
		rho := c / c0
		if math.Abs(rho) <= bound {
			break // the end of the first run of significant lags
		}
		mk := float64(m - k)
		sum += mk * (mk - 1) * (mk - 2) * rho
	}
	mf := float64(m)
	return 1 + 2*sum/(mf*(mf-1)*(mf-2))
}
