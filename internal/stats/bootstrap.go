package stats

import (
	"math"
	"math/rand/v2"
)

// BootstrapDiff estimates diff = stat(a) − stat(b) and its two-sided
// 1 − alpha percentile bootstrap confidence interval [lo, hi]: for each of
// the iterations it draws len(a) values from a and len(b) values from b
// uniformly with replacement (the groups are resampled independently), and
// lo and hi are the type-7 alpha/2 and 1 − alpha/2 quantiles (see Quantile)
// of the resampled differences. Resampled differences that are NaN are
// ignored.
//
// The percentile interval assumes the statistic's sampling distribution is
// roughly symmetric around the true value; it is fine for medians, means
// and quantiles away from the extremes of moderately large groups (say
// ≥ 20 values each), and too narrow for tiny groups. The resamples treat the
// values as independent, so autocorrelated series should be thinned or
// block-aggregated first.
//
// NaN values are dropped from a and b before anything else. stat receives a
// scratch slice it may reorder but must not keep; it is called
// 2·iterations + 2 times. The random stream is math/rand/v2's PCG seeded
// with (seed, 0x9e3779b97f4a7c15), so the result is a deterministic
// function of the inputs and seed. diff, lo and hi are NaN when a or b is
// empty after dropping NaN; lo and hi are NaN when iterations < 1 or alpha
// is not in (0, 1).
//
// Complexity: O(iterations·(|a| + |b|)) time plus the cost of stat, and
// O(iterations + |a| + |b|) space.
func BootstrapDiff(a, b []float64, stat func([]float64) float64, iterations int, alpha float64, seed uint64) (diff, lo, hi float64) {
	a, b = dropNaN(a), dropNaN(b)
	nan := math.NaN()
	if len(a) == 0 || len(b) == 0 {
		return nan, nan, nan
	}
	bufA := make([]float64, len(a))
	bufB := make([]float64, len(b))
	copy(bufA, a)
	copy(bufB, b)
	diff = stat(bufA) - stat(bufB)
	if iterations < 1 || !(alpha > 0 && alpha < 1) {
		return diff, nan, nan
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	diffs := make([]float64, 0, iterations)
	for range iterations {
		for i := range bufA {
			bufA[i] = a[rng.IntN(len(a))]
		}
		for i := range bufB {
			bufB[i] = b[rng.IntN(len(b))]
		}
		diffs = append(diffs, stat(bufA)-stat(bufB))
	}
	diffs = dropNaN(diffs)
	if len(diffs) == 0 {
		return diff, nan, nan
	}
	lo = quantile7(diffs, alpha/2)
	hi = quantile7(diffs, 1-alpha/2)
	return diff, lo, hi
}
