package stats

import (
	"math"
	"slices"
)

// TheilSen fits the line y = intercept + slope·x by the Theil–Sen estimator:
// slope is the median of the pairwise slopes (y_j − y_i)/(x_j − x_i) over all
// pairs i < j with x_i ≠ x_j, and intercept is the median of the residuals
// y_i − slope·x_i. The slope has a breakdown point of about 29 %: up to that
// fraction of arbitrary outliers cannot move it arbitrarily far. The x values
// need not be sorted or distinct.
//
// Points where x or y is not finite (NaN marks a missing sample) are
// ignored. ok is false, and slope and intercept are NaN, when no pair with
// distinct x remains, or when the median slope is NaN: halfway between
// an infinite slope (a difference near ±MaxFloat64) and another. The intercept is the value at x = 0: with x in Unix
// milliseconds it is far outside the data, so subtract a reference time from
// xs first when the intercept matters. It panics if len(xs) != len(ys).
//
// Complexity: O(n log n) expected time and O(n) memory (selectSlope), for
// the slope a selection among all pairwise slopes gives, bit for bit. A
// median in a long run of equal nonzero slopes (points on an exact
// straight line, for instance) is counted by one pass over all pairs,
// O(n²) time. Up to 181 points (fewer than 16,384 pairs), and for inputs
// the exact selection cannot vouch for (values beyond ±MaxFloat64/2, keys
// y − t·x that overflow, rounding too coarse to tell the slopes near the
// median apart), the median is selected as before: by one pass over all
// pairs holding the slopes near it, or among all of them, 8·n(n−1)/2 bytes
// (4 MB at n = 1000). Callers still downsample long series (for example
// take every k-th point, or per-step aggregates) before fitting.
func TheilSen(xs, ys []float64) (slope, intercept float64, ok bool) {
	x, y := finitePairs(xs, ys)
	slope, ok = medianSlope(x, y)
	if !ok {
		slopes := pairSlopes(x, y)
		if len(slopes) == 0 {
			return math.NaN(), math.NaN(), false
		}
		slope = quantile7(slopes, 0.5)
	}
	if math.IsNaN(slope) {
		// Halfway between an infinite slope and another (−Inf and a
		// finite one, or −Inf and +Inf): no line.
		return math.NaN(), math.NaN(), false
	}
	// median(y − s·x) = median(y − s·(x − x₀)) − s·x₀: the shifted form
	// subtracts numbers of similar size, which loses less precision when x is
	// far from 0.
	x0 := x[0]
	res := make([]float64, len(x))
	for i := range x {
		res[i] = y[i] - slope*(x[i]-x0)
	}
	intercept = quantile7(dropNaN(res), 0.5) - slope*x0
	return slope, intercept, true
}

// TheilSenCI returns the two-sided 1 − alpha confidence interval [lo, hi]
// for the Theil–Sen slope by Sen's (1968) rank-based method, as described by
// Gilbert (1987, ch. 16): with N the number of pairwise slopes (pairs with
// distinct x), Var(S) the null variance of Kendall's S between x and y, and
// C = Φ⁻¹(1 − alpha/2)·√Var(S), lo is the M₁-th and hi the (M₂+1)-th
// smallest slope, M₁ = (N − C)/2 and M₂ = (N + C)/2. Fractional ranks
// interpolate linearly between neighbouring order statistics, and ranks
// outside [1, N] are clamped (so small samples give the full slope range).
//
// Var(S) is Kendall's null variance with ties in both variables,
//
//	[n(n−1)(2n+5) − Σu(u−1)(2u+5) − Σv(v−1)(2v+5)]/18
//	  + Σu(u−1)(u−2)·Σv(v−1)(v−2) / (9n(n−1)(n−2))
//	  + Σu(u−1)·Σv(v−1) / (2n(n−1)),
//
// where u runs over the sizes of groups of tied x and v of tied y; with
// distinct x it is the Mann–Kendall variance of y (see MannKendall). The
// interval assumes independent residuals; autocorrelated series (most
// memory gauges at a short step) make it too narrow.
//
// Points are filtered as in TheilSen. lo and hi are NaN when no pair with
// distinct x remains or alpha is not in (0, 1). It panics if
// len(xs) != len(ys).
//
// Complexity: as TheilSen, O(n²) time and memory.
func TheilSenCI(xs, ys []float64, alpha float64) (lo, hi float64) {
	if !(alpha > 0 && alpha < 1) {
		return math.NaN(), math.NaN()
	}
	x, y := finitePairs(xs, ys)
	slopes := pairSlopes(x, y)
	if len(slopes) == 0 {
		return math.NaN(), math.NaN()
	}
	c := normalQuantile(1-alpha/2) * math.Sqrt(kendallVarS(x, y))
	nn := float64(len(slopes))
	lo = orderStat1(slopes, (nn-c)/2)
	hi = orderStat1(slopes, (nn+c)/2+1)
	return lo, hi
}

// TheilSenLimit returns one end of Sen's 1 − alpha confidence interval for
// the Theil–Sen slope (see TheilSenCI), the lower end when upper is false,
// with Var S given by the caller instead of the independent one: with
// C = Φ⁻¹(1 − alpha/2)·√varS and N pairwise slopes, the lower end is the
// (N − C)/2-th smallest slope and the upper the ((N + C)/2 + 1)-th, ranks
// clamped to [1, N] and fractional ranks interpolated, as TheilSenCI reads
// them. With varS the Var S of MannKendallHamedRao, which counts the
// autocorrelation of the points, the interval widens as the corrected
// test's p grows: TheilSenCI's interval assumes independent points and is
// too narrow for a gauge that wanders. ok is false, and the limit NaN,
// when no pair with distinct x remains, alpha is not in (0, 1), varS is
// negative or NaN, or the limit falls between an infinite slope and
// another.
//
// Why: a trend that is significant is not yet a trend as steep as a
// threshold. A limit of the slope tests both at once: a lower limit above
// a growth threshold says that the points grow at least that fast with
// confidence 1 − alpha/2.
//
// Complexity: O(n log n) expected time and O(n) memory, by the selection
// TheilSen uses (selectSlope); up to 181 points, and in the cases TheilSen
// documents, all slopes are held (O(n²)). Points are filtered as in
// TheilSen; it panics if len(xs) != len(ys).
func TheilSenLimit(xs, ys []float64, alpha, varS float64, upper bool) (float64, bool) {
	if !(alpha > 0 && alpha < 1) || !(varS >= 0) {
		return math.NaN(), false
	}
	x, y := finitePairs(xs, ys)
	c := normalQuantile(1-alpha/2) * math.Sqrt(varS)
	// rank is the 1-based, possibly fractional rank among total slopes.
	rank := func(total int) float64 {
		nn := float64(total)
		r := (nn - c) / 2
		if upper {
			r = (nn+c)/2 + 1
		}
		return math.Min(math.Max(r, 1), nn)
	}
	v, ok := selectSlope(x, y, func(total int) (int, float64) {
		r := rank(total)
		j := math.Floor(r)
		return int(j) - 1, r - j
	})
	if !ok {
		slopes := pairSlopes(x, y)
		if len(slopes) == 0 {
			return math.NaN(), false
		}
		v = orderStat1(slopes, rank(len(slopes)))
	}
	if math.IsNaN(v) {
		// Between an infinite slope and another, as in TheilSen.
		return math.NaN(), false
	}
	return v, true
}

// kendallVarS returns the null variance of Kendall's
// S = Σ_{i<j} sign(x_j − x_i)·sign(y_j − y_i) with ties in both variables
// (Kendall, Rank Correlation Methods, ch. 4), the formula in TheilSenCI's comment. x and y are
// NaN-free with len ≥ 2.
func kendallVarS(x, y []float64) float64 {
	n := float64(len(x))
	tx, ty := tieSums(x), tieSums(y)
	v := (n*(n-1)*(2*n+5)-tx.t2-ty.t2)/18 + tx.t1*ty.t1/(2*n*(n-1))
	if n > 2 { // Σt(t−1)(t−2) is 0 anyway for n ≤ 2.
		v += tx.t3 * ty.t3 / (9 * n * (n - 1) * (n - 2))
	}
	return math.Max(v, 0)
}

// orderStat1 returns the r-th smallest value of a for a 1-based, possibly
// fractional rank r clamped to [1, len(a)], interpolating linearly between
// neighbours; a must be NaN-free and non-empty and is reordered.
func orderStat1(a []float64, r float64) float64 {
	r = math.Min(math.Max(r, 1), float64(len(a)))
	j := int(math.Floor(r))
	return orderStat0(a, j-1, r-float64(j))
}

// finitePairs returns copies of the pairs (xs[i], ys[i]) where both are
// finite.
func finitePairs(xs, ys []float64) (x, y []float64) { return keptPairs(xs, ys, isFinite) }

// keptPairs is the pairs (xs[i], ys[i]) whose both values keep says to
// keep, in order. It panics if the lengths differ.
func keptPairs(xs, ys []float64, keep func(float64) bool) (x, y []float64) {
	if len(xs) != len(ys) {
		panic("stats: xs and ys have different lengths")
	}
	x = make([]float64, 0, len(xs))
	y = make([]float64, 0, len(ys))
	for i := range xs {
		if keep(xs[i]) && keep(ys[i]) {
			x = append(x, xs[i])
			y = append(y, ys[i])
		}
	}
	return x, y
}

func notNaN(v float64) bool { return !math.IsNaN(v) }

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// pairSlopes returns (y_j − y_i)/(x_j − x_i) for every pair i < j with
// x_i ≠ x_j. A slope can overflow to ±Inf but is never NaN for finite input.
func pairSlopes(x, y []float64) []float64 {
	n := len(x)
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range n {
		xi, yi := x[i], y[i]
		for j := i + 1; j < n; j++ {
			if dx := x[j] - xi; dx != 0 {
				slopes = append(slopes, (y[j]-yi)/dx)
			}
		}
	}
	return slopes
}

// ties holds the sums over groups of t tied values that the variances of
// Kendall's S need: t1 = Σt(t−1), t2 = Σt(t−1)(2t+5), t3 = Σt(t−1)(t−2).
// pairs = Σt(t−1)/2 is the number of tied pairs.
type ties struct {
	t1, t2, t3 float64
	pairs      int64
}

// tieSums sorts a copy of a (NaN-free) and sums over its groups of equal
// values.
func tieSums(a []float64) ties {
	s := slices.Clone(a)
	slices.Sort(s)
	return tieSumsSorted(s)
}

// tieSumsSorted is tieSums on sorted input.
func tieSumsSorted(s []float64) ties {
	var out ties
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if t := float64(j - i); t > 1 {
			out.t1 += t * (t - 1)
			out.t2 += t * (t - 1) * (2*t + 5)
			out.t3 += t * (t - 1) * (t - 2)
			out.pairs += int64(j-i) * int64(j-i-1) / 2
		}
		i = j
	}
	return out
}

// medianSlope is the median of pairSlopes(x, y) as quantile7(…, 0.5)
// computes it, found without holding every slope: by selectSlope in
// O(n log n) expected time, or when that cannot vouch for its answer, by
// medianSlopeBracket's one pass over all pairs. ok is false when neither
// can: the caller then selects among all the slopes.
func medianSlope(x, y []float64) (float64, bool) {
	if v, ok := selectSlope(x, y, medianRank); ok {
		return v, true
	}
	return medianSlopeBracket(x, y)
}

// medianRank is the rank quantile7(a, 0.5) reads for len(a) = total: the
// k-th smallest (0-based) and, when frac > 0, frac of the way to the next.
func medianRank(total int) (k int, frac float64) {
	h := float64(total-1) * 0.5
	k = int(math.Floor(h))
	if k >= total-1 {
		k = total - 1
	}
	return k, h - float64(k)
}

// medianSlopeBracket is medianSlope by one pass over all pairs: a sample
// of the slopes (pairs drawn by a fixed pseudo-random sequence) brackets
// the median between two of its values, the pass counts the slopes below
// the bracket and keeps those inside it, and the median is selected among
// those. The order statistics are the same whichever slopes are held, so
// is the result. ok is false when the bracket misses the median, a slope
// is NaN, or the pairs are too few to gain.
func medianSlopeBracket(x, y []float64) (float64, bool) {
	const (
		minPairs = 1 << 14 // below, all slopes are cheap to hold
		samples  = 4096
		margin   = 4 * 32 // four standard deviations of the sample's median rank (√(4096/4) = 32)
	)
	n := len(x)
	if n*(n-1)/2 < minPairs {
		return 0, false
	}
	// The pairs with distinct x: all of them less those within groups of
	// equal x.
	sorted := slices.Clone(x)
	slices.Sort(sorted)
	total := n * (n - 1) / 2
	for i := 0; i < n; {
		j := i + 1
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		total -= (j - i) * (j - i - 1) / 2
		i = j
	}
	if total < minPairs {
		return 0, false
	}
	sample := make([]float64, 0, samples)
	state := uint64(n)*0x9e3779b97f4a7c15 + 1
	for tries := 0; len(sample) < samples && tries < 4*samples; tries++ {
		state += 0x9e3779b97f4a7c15 // splitmix64
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		i, j := int(z%uint64(n)), int((z>>32)%uint64(n))
		if dx := x[j] - x[i]; dx != 0 {
			sample = append(sample, (y[j]-y[i])/dx)
		}
	}
	if len(sample) < samples/2 || slices.ContainsFunc(sample, math.IsNaN) {
		return 0, false
	}
	slices.Sort(sample)
	// quantile7 reads the k-th smallest slope and, between two, the next.
	h := float64(total-1) * 0.5
	k := int(math.Floor(h))
	frac := h - float64(k)
	at := float64(k) / float64(total) * float64(len(sample))
	lo := sample[max(0, int(at)-margin)]
	hi := sample[min(len(sample)-1, int(at)+margin)]
	below := 0
	// About (2·margin+1)/len(sample) of the slopes fall in the bracket.
	kept := make([]float64, 0, total/len(sample)*(2*margin+1)*5/4+16)
	for i := range n {
		xi, yi := x[i], y[i]
		for j := i + 1; j < n; j++ {
			dx := x[j] - xi
			if dx == 0 {
				continue
			}
			s := (y[j] - yi) / dx
			// Most slopes are outside the bracket, on either side at
			// random: counted without a branch.
			b := 0
			if s < lo {
				b = 1
			}
			below += b
			if s >= lo && s <= hi {
				kept = append(kept, s)
			} else if s != s {
				return 0, false // NaN
			}
		}
		if len(kept) > total/4 {
			return 0, false // not a bracket worth the pass: hold them all
		}
	}
	r := k - below
	need := 1
	if frac > 0 {
		need = 2 // and the next (there is one: k is below the middle)
	}
	if r < 0 || r+need > len(kept) {
		return 0, false
	}
	return orderStat0(kept, r, frac), true
}
