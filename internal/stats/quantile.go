// Package stats holds the robust trend and comparison statistics the
// diagnosis rules use: Theil–Sen slopes with Sen's confidence interval, the
// Mann–Kendall trend test, Pearson and Spearman correlation with p-values, a
// percentile bootstrap for the difference of two groups, and order
// statistics (median, type-7 quantiles, median absolute deviation).
//
// Conventions shared by every function:
//
//   - Inputs are never modified; functions that need scratch space copy.
//   - NaN marks a missing sample and is dropped before computing (pairs are
//     dropped when either coordinate is missing). Each function says how it
//     treats ±Inf.
//   - Paired inputs (xs, ys) must have equal lengths; a mismatch is a
//     programming error and panics.
//   - When a statistic is undefined (too few values, zero variance) the
//     function returns NaN and, where it has one, ok == false.
//   - There is no package-level mutable state: randomness comes from a seed
//     passed in, so every result is deterministic.
//
// The p-values use normal and Student-t approximations computed here from
// math.Erfc and a continued fraction for the regularized incomplete beta
// function; no external statistics library is needed.
package stats

import (
	"math"
	"slices"
)

// Median returns the middle value of xs, the mean of the two middle values
// when their count is even (the same as Quantile(xs, 0.5)). NaN values are
// ignored; ±Inf take part as ordinary extreme values (so the median of
// {-Inf, +Inf} is NaN). It returns NaN when no value is left.
//
// Complexity: O(n) expected time (selection, not a full sort) and O(n)
// scratch space.
func Median(xs []float64) float64 {
	return Quantile(xs, 0.5)
}

// Quantile returns the q-quantile of xs by the "type 7" definition of
// Hyndman and Fan (1996), the default of R's quantile() and numpy's
// quantile(): with the n values sorted as x[0] ≤ … ≤ x[n-1] and
// h = (n−1)·q, it is x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]). So q = 0 gives
// the minimum, q = 1 the maximum and q = 0.5 the median.
//
// NaN values are ignored; ±Inf are ordinary extreme values, and
// interpolating between −Inf and +Inf gives NaN. It returns NaN when no value
// is left or when q is outside [0, 1] or NaN.
//
// Complexity: O(n) expected time (selection) and O(n) scratch space.
func Quantile(xs []float64, q float64) float64 {
	if !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	a := dropNaN(xs)
	if len(a) == 0 {
		return math.NaN()
	}
	return quantile7(a, q)
}

// MAD returns the median absolute deviation of xs: Median(|x − Median(xs)|).
// It is the unscaled definition; multiply by 1.4826 (1/Φ⁻¹(3/4)) to get a
// consistent estimator of the standard deviation of normal data. NaN values
// are ignored; an infinite value contributes an infinite deviation. It
// returns NaN when no value is left.
//
// Complexity: O(n) expected time and O(n) scratch space.
func MAD(xs []float64) float64 {
	a := dropNaN(xs)
	if len(a) == 0 {
		return math.NaN()
	}
	m := quantile7(a, 0.5)
	for i, v := range a {
		a[i] = math.Abs(v - m)
	}
	// An infinite median leaves NaN deviations (Inf − Inf); drop them.
	if a = dropNaN(a); len(a) == 0 {
		return math.NaN()
	}
	return quantile7(a, 0.5)
}

// dropNaN returns a fresh copy of xs without its NaN values.
func dropNaN(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, v := range xs {
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// quantile7 is Quantile on a NaN-free, non-empty scratch slice that it may
// reorder.
func quantile7(a []float64, q float64) float64 {
	h := float64(len(a)-1) * q
	j := int(math.Floor(h))
	if j >= len(a)-1 {
		j = len(a) - 1
	}
	return orderStat0(a, j, h-float64(j))
}

// orderStat0 returns the (j+frac)-th smallest value of a (0-based, frac in
// [0, 1)), interpolating linearly between the j-th and (j+1)-th; a must be
// NaN-free and is reordered.
func orderStat0(a []float64, j int, frac float64) float64 {
	selectK(a, j)
	v := a[j]
	if frac <= 0 || j+1 >= len(a) {
		return v
	}
	next := slices.Min(a[j+1:])
	if next == v {
		return v
	}
	return lerp(v, next, frac)
}

// lerp is v + frac·(next − v), the interpolation every order statistic
// here uses: one function, so that a compiler that fuses the multiply
// and add does so alike wherever the same order statistic is computed.
func lerp(v, next, frac float64) float64 {
	return v + frac*(next-v)
}

// selectK reorders a (NaN-free) so that a[k] holds the value it would have
// if a were sorted, with a[:k] ≤ a[k] ≤ a[k+1:]. It is a quickselect with a
// median-of-three pivot and Hoare's partition, which stops on values equal
// to the pivot on both sides so runs of equal values split evenly. When the
// partitions stop shrinking (more than 8·n element visits) it sorts the
// remaining range instead, which bounds the worst case at O(n log n).
func selectK(a []float64, k int) {
	lo, hi := 0, len(a)-1
	budget := 8*len(a) + 16
	for hi > lo {
		if budget < 0 {
			slices.Sort(a[lo : hi+1])
			return
		}
		budget -= hi - lo + 1
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		// Hoare: afterwards a[lo:j+1] ≤ pivot ≤ a[j+1:hi+1] with lo ≤ j < hi
		// (the pivot sits at the lower middle, so j cannot reach hi).
		i, j := lo-1, hi+1
		for {
			i++
			for a[i] < pivot {
				i++
			}
			j--
			for a[j] > pivot {
				j--
			}
			if i >= j {
				break
			}
			a[i], a[j] = a[j], a[i]
		}
		if k <= j {
			hi = j
		} else {
			lo = j + 1
		}
	}
}
