package stats

import (
	"math"
	"math/bits"
	"slices"
)

// selectSlope returns what orderStat0(pairSlopes(x, y), k, frac) returns,
// for the k and frac that rank gives for the number of slopes, without
// holding every slope: O(n log n) expected time and O(n) memory for n
// points. It is the randomized interval shrinking of Matoušek (1991) and
// Dillencourt, Mount and Netanyahu (1992), made exact for floating point.
//
// For a threshold t, order the points by the key y − t·x (a cut; ties as
// in the order it was sorted from, so points of equal x stay in order of
// y). In exact arithmetic the pair a, b with x_a < x_b has a slope below t
// exactly when the key puts b first, so the slopes between two thresholds
// lo < hi are those of the pairs the two orders put differently: the
// inversions between two permutations, counted by merge sort in
// O(n log n), drawn uniformly at random with a Fenwick tree and listed in
// O(n log n + their number). Random slopes in the interval (in the first
// round, of any pairs) narrow it around the wanted rank until it holds at
// most 32 slopes a point (or 16,384); those are computed as pairSlopes computes them
// and the order statistic is selected among them.
//
// The keys are rounded, so a cut can put a pair on the wrong side of t
// when its slope is within β(t) of t (β = 2u·max|key| / least gap between
// distinct x, u = 2⁻⁵³; inflated). That never changes the result: with
// I(t) the pairs the cut at t puts below, the pairs not listed are in both
// I(lo) and I(hi), with slopes at most lo + β(lo) (after the rounding of
// the division), or in neither, with slopes at least hi − β(hi); the
// answer is accepted only when the selected slopes lie between those two
// bounds, which makes their rank among all slopes their rank among the
// listed ones plus |I(lo) ∩ I(hi)|. When they do not, the interval widens
// by the bound, twice at most.
//
// When the wanted rank is in a run of equal slopes that the cuts cannot
// split, the slopes below and equal to the run's value are counted (tieAt:
// in O(n log n) for 0, by one pass over all pairs otherwise).
//
// ok is false, and the caller must select otherwise, when the pairs are
// fewer than selMinPairs, a value is beyond ±MaxFloat64/2, a key is not
// finite, the interval to list holds more than 128 slopes a point (keys
// too coarse beside the slopes near the answer), or the answer cannot be
// vouched for.
func selectSlope(x, y []float64, rank func(total int) (k int, frac float64)) (float64, bool) {
	s, total := newSlopeSel(x, y)
	if s == nil {
		return 0, false
	}
	k, frac := rank(total)
	if k < 0 || k >= total {
		return 0, false
	}
	need := 1
	if frac > 0 && k+1 < total {
		need = 2
	}
	return s.run(k, frac, need, total, nil)
}

// Tuning of selectSlope; none of these changes the result.
const (
	selMinPairs      = 1 << 14 // below, the caller's slopes are cheap to hold
	selMaxRounds     = 12
	selFirstPerPoint = 4       // pairs drawn directly in the first round, per point
	selMaxFirst      = 1 << 14 // and at most
	selMinSample     = 1024    // pairs drawn in a round, at least
	selMaxSample     = 4096    // and in a later round (by the Fenwick tree) at most
	selListPerPoint  = 32      // list the interval's slopes when at most this many per point,
	selMinList       = 1 << 14 // or this many
)

type slopeSel struct {
	n        int
	x, y     []float64 // points in label order: by x, then y, then input index
	orig     []int32   // the input index of each label
	xin, yin []float64
	gap      float64 // the least difference between distinct x, as computed
	total    int

	kv    []keyLabel
	kvTmp []keyLabel
	q     []int32
	buf   []int32
	bit   []int32
	draw  []int
	rng   uint64
}

// A keyLabel is a point's key, as sortBits, and its label.
type keyLabel struct {
	k uint64
	l int32
}

// sortBits maps float64 to uint64 in order, −0 as +0: keys equal as
// numbers stay in the order they are sorted from (a cut at 0 has keys ±0
// at points of equal x with y = ±0, which must keep their order).
func sortBits(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// order sorts s.kv by key, stably, and makes it c's order and positions
// and counts the pairs it puts below.
func (s *slopeSel) order(c *cut) {
	radixSort(s.kv, s.kvTmp)
	for p, e := range s.kv {
		c.order[p], c.pos[e.l] = e.l, int32(p)
	}
	copy(s.q, c.pos)
	c.below = int(sortCountInversions(s.q, s.buf))
}

// radixSort sorts kv by key, stably (least significant byte first,
// skipping the bytes all keys share); tmp is scratch of the same length.
func radixSort(kv, tmp []keyLabel) {
	if len(kv) == 0 {
		return
	}
	var counts [8][256]int32
	for _, e := range kv {
		for b := range counts {
			counts[b][byte(e.k>>(8*b))]++
		}
	}
	src, dst := kv, tmp
	for b := range counts {
		c := &counts[b]
		if int(c[byte(src[0].k>>(8*b))]) == len(kv) {
			continue
		}
		sum := int32(0)
		for i, v := range c {
			c[i], sum = sum, sum+v
		}
		for _, e := range src {
			d := byte(e.k >> (8 * b))
			dst[c[d]] = e
			c[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &kv[0] {
		copy(kv, src)
	}
}

// A cut is the order of the points by their key at one threshold t.
type cut struct {
	t     float64
	order []int32 // labels by key, ties in the order of the cut it was made from
	pos   []int32 // pos[label] is its index in order
	below int     // pairs a < b (labels) with distinct x that order puts b first
	// Every pair with distinct x that order puts larger-x first has a
	// slope (as pairSlopes computes it) ≤ maxBelow; every other one ≥
	// minAbove.
	maxBelow, minAbove float64
}

func newSlopeSel(xin, yin []float64) (*slopeSel, int) {
	n := len(xin)
	if n*(n-1)/2 < selMinPairs || n > math.MaxInt32 {
		return nil, 0
	}
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(i)
	}
	slices.SortFunc(labels, func(a, b int32) int {
		switch {
		case xin[a] < xin[b]:
			return -1
		case xin[a] > xin[b]:
			return 1
		case yin[a] < yin[b]:
			return -1
		case yin[a] > yin[b]:
			return 1
		}
		return int(a - b)
	})
	s := &slopeSel{n: n, orig: labels, xin: xin, yin: yin,
		x: make([]float64, n), y: make([]float64, n)}
	big := 0.0
	for l, i := range labels {
		s.x[l], s.y[l] = xin[i], yin[i]
		big = max(big, math.Abs(xin[i]), math.Abs(yin[i]))
	}
	if !(big <= math.MaxFloat64/2) {
		// A difference could overflow, which the error bounds do not
		// cover (nor NaN).
		return nil, 0
	}
	s.gap = math.Inf(1)
	total := n * (n - 1) / 2
	for i := 0; i < n; {
		j := i + 1
		for j < n && s.x[j] == s.x[i] {
			j++
		}
		total -= (j - i) * (j - i - 1) / 2
		if j < n {
			s.gap = min(s.gap, s.x[j]-s.x[j-1])
		}
		i = j
	}
	if total < selMinPairs {
		return nil, total
	}
	s.total = total
	s.kv = make([]keyLabel, n)
	s.kvTmp = make([]keyLabel, n)
	s.q = make([]int32, n)
	s.buf = make([]int32, n)
	s.bit = make([]int32, n+1)
	s.rng = uint64(n)*0x9e3779b97f4a7c15 + 7
	return s, total
}

func (s *slopeSel) newCut() *cut {
	return &cut{order: make([]int32, s.n), pos: make([]int32, s.n)}
}

// minusInf is the cut below every slope: the points by x (label order).
func (s *slopeSel) minusInf() *cut {
	c := s.newCut()
	for l := range c.order {
		c.order[l], c.pos[l] = int32(l), int32(l)
	}
	c.t, c.maxBelow, c.minAbove = math.Inf(-1), math.Inf(-1), math.Inf(-1)
	return c
}

// plusInf is the cut above every slope: the groups of equal x from the
// largest x down, each in label order.
func (s *slopeSel) plusInf() *cut {
	c := s.newCut()
	p := 0
	for j := s.n; j > 0; {
		i := j - 1
		for i > 0 && s.x[i-1] == s.x[j-1] {
			i--
		}
		for l := i; l < j; l++ {
			c.order[p], c.pos[l] = int32(l), int32(p)
			p++
		}
		j = i
	}
	c.t, c.maxBelow, c.minAbove = math.Inf(1), math.Inf(1), math.Inf(1)
	c.below = s.total
	return c
}

// setCut makes c the cut at the finite threshold t, starting the sort from
// the order of near (an order close to it sorts faster). It is false when
// a key is not finite.
func (s *slopeSel) setCut(c *cut, t float64, near *cut) bool {
	if !isFinite(t) {
		return false
	}
	kv := s.kv
	kmax := 0.0
	for p, l := range near.order {
		// One rounding: the key is within u·|key| of y − t·x.
		k := math.FMA(-t, s.x[l], s.y[l])
		kv[p] = keyLabel{sortBits(k), l}
		kmax = max(kmax, math.Abs(k))
	}
	if !(kmax <= math.MaxFloat64) {
		return false
	}
	s.order(c)
	// The order puts b (x_b > x_a) first only if key_b ≤ key_a, so
	// (x_b − x_a)(slope − t) ≤ 2u·max|y − t·x| + 2⁻¹⁰⁷³: the slope is at
	// most t + β and, had it put a first, at least t − β. The division
	// that makes a slope adds at most 3u relative (and 2⁻¹⁰⁷⁵), which the
	// widening in up and down covers.
	beta := (0x1p-51*kmax + 0x1p-1060) / s.gap * (1 + 0x1p-50)
	c.t = t
	c.maxBelow = up(t + beta)
	c.minAbove = down(t - beta)
	return true
}

func up(v float64) float64   { return v + math.Abs(v)*0x1p-48 + 0x1p-1060 }
func down(v float64) float64 { return v - math.Abs(v)*0x1p-48 - 0x1p-1060 }

// between fills s.q with hi's positions of the points in lo's order: its
// inversions are the pairs the two cuts order differently.
func (s *slopeSel) between(lo, hi *cut) {
	for p, l := range lo.order {
		s.q[p] = hi.pos[l]
	}
}

// slope is the slope of the pair of labels a and b as pairSlopes computes
// it (the input index order decides the signs of the differences).
func (s *slopeSel) slope(a, b int32) float64 {
	i, j := s.orig[a], s.orig[b]
	if i > j {
		i, j = j, i
	}
	return (s.yin[j] - s.yin[i]) / (s.xin[j] - s.xin[i])
}

func (s *slopeSel) next() uint64 {
	s.rng += 0x9e3779b97f4a7c15 // splitmix64
	z := s.rng
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// samplePairs appends to out the slopes of up to m pairs of points drawn
// uniformly (with replacement) among those with distinct x, fewer when
// most pairs have equal x.
func (s *slopeSel) samplePairs(m int, out []float64) []float64 {
	n := uint64(s.n)
	for tries := 0; len(out) < m && tries < 4*m; tries++ {
		z := s.next()
		// Two 32-bit halves scaled to [0, n) (Lemire's reduction).
		a, b := int32((z&0xffffffff)*n>>32), int32((z>>32)*n>>32)
		if s.x[a] != s.x[b] {
			out = append(out, s.slope(a, b))
		}
	}
	return out
}

// sample appends to out the slopes of m pairs drawn uniformly (with
// replacement) from the d pairs that lo and hi order differently (d is an
// estimate: a draw beyond their number is dropped, and when they are more
// the last ones are never drawn; neither changes a result). For each
// point the pairs in which it comes second in lo's order are those before
// it with a larger position in hi's; a Fenwick tree over hi's positions
// counts them and finds the t-th.
func (s *slopeSel) sample(lo, hi *cut, d, m int, out []float64) []float64 {
	if d <= 0 {
		return out
	}
	s.between(lo, hi)
	draw := s.draw[:0]
	for range m {
		draw = append(draw, int(s.next()%uint64(d)))
	}
	slices.Sort(draw)
	s.draw = draw
	bit := s.bit
	clear(bit)
	n := s.n
	cum, di := 0, 0
	for p, v := range s.q {
		// le: points before p with a smaller position in hi's order.
		le := 0
		for i := int(v); i > 0; i &= i - 1 {
			le += int(bit[i])
		}
		c := p - le
		for di < len(draw) && draw[di] < cum+c {
			// The (le + t + 1)-th smallest position inserted so far.
			want := int32(le + draw[di] - cum + 1)
			w := 0
			for step := 1 << (bits.Len(uint(n)) - 1); step > 0; step >>= 1 {
				if w+step <= n && bit[w+step] < want {
					w += step
					want -= bit[w]
				}
			}
			// w is the 0-based position in hi's order.
			out = append(out, s.slope(hi.order[w], hi.order[v]))
			di++
		}
		cum += c
		for i := int(v) + 1; i <= n; i += i & -i {
			bit[i]++
		}
	}
	return out
}

// list appends the slopes of the pairs lo and hi order differently to out;
// ok is false, and the list incomplete, when they are more than limit.
func (s *slopeSel) list(lo, hi *cut, out []float64, limit int) ([]float64, bool) {
	s.between(lo, hi)
	a, buf := s.q, s.buf
	n := s.n
	for w := 1; w < n; w *= 2 {
		for l := 0; l < n-w; l += 2 * w {
			mid, h := l+w, min(l+2*w, n)
			i, j, k := l, mid, l
			for i < mid && j < h {
				if a[j] < a[i] {
					if len(out)+mid-i > limit {
						return out, false
					}
					b := hi.order[a[j]]
					for _, v := range a[i:mid] {
						out = append(out, s.slope(hi.order[v], b))
					}
					buf[k] = a[j]
					j++
				} else {
					buf[k] = a[i]
					i++
				}
				k++
			}
			k += copy(buf[k:], a[i:mid])
			copy(buf[k:], a[j:h])
			copy(a[l:h], buf[l:h])
		}
	}
	return out, true
}

// run selects the k-th slope (and frac of the way to the next when need
// is 2) among total, starting from the cuts below and above all slopes or,
// when start is not nil, from start and the cut above all.
func (s *slopeSel) run(k int, frac float64, need, total int, start *cut) (float64, bool) {
	n := s.n
	enumCap := max(selListPerPoint*n, selMinList)

	lo, hi := s.minusInf(), s.plusInf()
	if start != nil {
		lo = start
	}
	// The pairs lo and hi order differently, and those both put below,
	// estimated as if the cuts were nested (exact when they are; rounded
	// keys can add a few pairs to both, which only the listing counts).
	d, low := hi.below-lo.below, lo.below
	c1, c2 := s.newCut(), s.newCut()
	var samp []float64
	for round := 0; d > enumCap; round++ {
		if round == selMaxRounds {
			return 0, false
		}
		var m int
		if round == 0 && start == nil {
			// Every pair with distinct x is in the interval: draw them
			// directly, and more of them (cheaper than a round).
			m = min(max(selFirstPerPoint*n, selMinSample), selMaxFirst)
			samp = s.samplePairs(m, make([]float64, 0, m))
			if len(samp) < m/2 {
				samp = s.sample(lo, hi, d, m, samp[:0])
			}
		} else {
			m = min(max(n, selMinSample), selMaxSample)
			samp = s.sample(lo, hi, d, m, samp[:0])
		}
		if len(samp) == 0 || slices.ContainsFunc(samp, math.IsNaN) {
			return 0, false
		}
		m = len(samp)
		// Sample ranks iLo and iHi hold the wanted ones within three
		// standard deviations (√m/2 at most).
		margin := int(1.5*math.Sqrt(float64(m))) + 2
		at := min(max(int(float64(k-low)/float64(d)*float64(m)), 0), m-1)
		iLo, iHi := at-margin, at+need-1+margin
		selectK(samp, at)
		if iLo >= 0 {
			selectK(samp[:at], iLo)
		}
		if iHi < m {
			selectK(samp[at+1:], iHi-at-1)
		}
		if iLo >= 0 && iHi < m && samp[iLo] == samp[iHi] {
			// A run of equal slopes wider than the sample's spread.
			return s.tieAt([]float64{samp[at]}, k, frac, need, total)
		}
		moved := false
		if iLo >= 0 && samp[iLo] > lo.t && s.setCut(c1, samp[iLo], lo) && c1.below <= k {
			lo, c1 = c1, lo
			moved = true
		}
		if iHi < m && samp[iHi] < hi.t && s.setCut(c2, samp[iHi], hi) && c2.below >= k+need {
			hi, c2 = c2, hi
			moved = true
		}
		if !moved {
			// The wanted slope is in a run of equal ones that the cuts
			// cannot separate: at it, or at an end of the sample's window
			// when the run ends there.
			cands := []float64{samp[at]}
			for _, i := range []int{iLo, iHi} {
				if i >= 0 && i < m && !slices.Contains(cands, samp[i]) {
					cands = append(cands, samp[i])
				}
			}
			return s.tieAt(cands, k, frac, need, total)
		}
		d, low = hi.below-lo.below, lo.below
	}
	// The pairs not listed: low of them with slopes ≤ lo.maxBelow, the
	// rest ≥ hi.minAbove. The selected ones must lie between; when one
	// does not, the interval widens by its bound, at most twice.
	for widen := 0; ; widen++ {
		// Rounded keys that misplace many pairs could make the list much
		// longer than estimated: memory stays O(n).
		slopes, ok := s.list(lo, hi, make([]float64, 0, max(d, 0)+16), 4*enumCap)
		if !ok || slices.ContainsFunc(slopes, math.IsNaN) {
			return 0, false
		}
		// Each cut's count below is |I|; the listed pairs are the
		// symmetric difference of the two I, so |I(lo) ∩ I(hi)| is
		// (|I(lo)| + |I(hi)| − d)/2.
		d = len(slopes)
		if (lo.below+hi.below-d)%2 != 0 {
			return 0, false
		}
		low = (lo.below + hi.below - d) / 2
		r := k - low
		if r < 0 || r+need > d {
			return 0, false
		}
		// orderStat0(slopes, r, frac), keeping the next slope.
		selectK(slopes, r)
		first, last := slopes[r], slopes[r]
		if need == 2 {
			last = slices.Min(slopes[r+1:])
		}
		lowOK := low == 0 || lo.maxBelow <= first
		highOK := total-low-d == 0 || hi.minAbove >= last
		if lowOK && highOK {
			if last == first {
				return first, true
			}
			return lerp(first, last, frac), true
		}
		if widen == 2 {
			return 0, false
		}
		if !lowOK {
			t := min(lo.t, first) - 2*(lo.maxBelow-lo.t)
			if !s.setCut(c1, t, lo) || c1.below > k {
				return 0, false
			}
			lo, c1 = c1, lo
		}
		if !highOK {
			t := max(hi.t, last) + 2*(hi.t-hi.minAbove)
			if !s.setCut(c2, t, hi) || c2.below < k+need {
				return 0, false
			}
			hi, c2 = c2, hi
		}
		d = hi.below - lo.below
	}
}

// tieAt returns the order statistic when it is one of cands, values of
// runs of equal slopes: it counts the slopes below each and equal to it,
// in O(n log n) for 0 (zeroCounts), for the others by one pass over all
// pairs (countAt). ok is false when the k-th slope is none of them.
func (s *slopeSel) tieAt(cands []float64, k int, frac float64, need, total int) (float64, bool) {
	runs := make([]slopeRun, 0, len(cands))
	var other []float64
	for _, v := range cands {
		if v != 0 {
			other = append(other, v)
		} else if less, equal, ok := s.zeroCounts(); ok {
			// The least slope above 0 is not counted (NaN).
			runs = append(runs, slopeRun{v, less, equal, math.NaN()})
		} else {
			other = append(other, v)
		}
	}
	if len(other) > 0 {
		counted, ok := s.countAt(other)
		if !ok {
			return 0, false
		}
		runs = append(runs, counted...)
	}
	for _, r := range runs {
		if k < r.less || k >= r.less+r.equal {
			continue
		}
		if need == 1 || k+1 < r.less+r.equal {
			return r.v, true
		}
		// The next slope is the least above the run (as orderStat0
		// takes it); above 0, selected from the cut just above 0.
		next := r.above
		if math.IsNaN(next) {
			c := s.newCut()
			if s.zeroPlus(c); c.below != r.less+r.equal {
				return 0, false
			}
			var ok bool
			if next, ok = s.run(k+1, 0, 1, total, c); !ok {
				return 0, false
			}
		}
		if next == r.v {
			return r.v, true
		}
		return lerp(r.v, next, frac), true
	}
	return 0, false
}

// A slopeRun counts the slopes below v and equal to it; above is the
// least slope above v (+Inf when there is none, NaN when not counted).
type slopeRun struct {
	v           float64
	less, equal int
	above       float64
}

// countAt counts, for each of vs, in one pass over all pairs in
// pairSlopes's order and arithmetic, the slopes below v and equal to it,
// and finds the least above. ok is false when a slope is NaN.
func (s *slopeSel) countAt(vs []float64) ([]slopeRun, bool) {
	runs := make([]slopeRun, len(vs))
	for c, v := range vs {
		runs[c] = slopeRun{v: v, above: math.Inf(1)}
	}
	x, y := s.xin, s.yin
	for i := range x {
		xi, yi := x[i], y[i]
		for j := i + 1; j < len(x); j++ {
			dx := x[j] - xi
			if dx == 0 {
				continue
			}
			sl := (y[j] - yi) / dx
			if sl != sl {
				return nil, false
			}
			for c := range runs {
				r := &runs[c]
				switch {
				case sl < r.v:
					r.less++
				case sl == r.v:
					r.equal++
				case sl < r.above:
					r.above = sl
				}
			}
		}
	}
	return runs, true
}

// zeroPlus makes c the cut just above 0: the points by y, equal y from the
// largest x down (equal x in label order), so that it puts below exactly
// the pairs with slopes ≤ 0, when zeroCounts is ok (no quotient underflows
// to 0).
func (s *slopeSel) zeroPlus(c *cut) {
	// Stably by y from the order above all slopes (x descending, equal x
	// in label order).
	for p, l := range s.plusInf().order {
		s.kv[p] = keyLabel{sortBits(s.y[l]), l}
	}
	s.order(c)
	c.t, c.maxBelow, c.minAbove = 0, 0, 0
}

// zeroCounts counts the slopes below 0 and equal to 0 in O(n log n): a
// slope's sign is that of (y_b − y_a)·(x_b − x_a), so those below 0 are
// the discordant pairs (merge sort counts them) and those equal to 0 the
// pairs with equal y and distinct x. ok is false when a quotient could
// underflow to 0: the least difference between distinct y over the range
// of x is below 2⁻¹⁰⁰⁰.
func (s *slopeSel) zeroCounts() (less, equal int, ok bool) {
	n := s.n
	byY := make([]int32, n)
	for l := range byY {
		byY[l] = int32(l)
	}
	slices.SortFunc(byY, func(a, b int32) int {
		switch {
		case s.y[a] < s.y[b]:
			return -1
		case s.y[a] > s.y[b]:
			return 1
		}
		return int(a - b)
	})
	// Dense ranks of y by label; pairs of equal y.
	rank := s.q
	gapY := math.Inf(1)
	r := int32(0)
	for i := 0; i < n; {
		j := i + 1
		for j < n && s.y[byY[j]] == s.y[byY[i]] {
			j++
		}
		equal += (j - i) * (j - i - 1) / 2
		for _, l := range byY[i:j] {
			rank[l] = r
		}
		if j < n {
			gapY = min(gapY, s.y[byY[j]]-s.y[byY[i]])
		}
		r++
		i = j
	}
	if !(gapY/(s.x[n-1]-s.x[0]) >= 0x1p-1000) {
		return 0, 0, false
	}
	// Less the pairs of equal y that have equal x too (label order is by
	// x, then y).
	for i := 0; i < n; {
		j := i + 1
		for j < n && s.x[j] == s.x[i] && s.y[j] == s.y[i] {
			j++
		}
		equal -= (j - i) * (j - i - 1) / 2
		i = j
	}
	// Within equal x the ranks ascend, so no such pair is counted.
	return int(sortCountInversions(rank, s.buf)), equal, true
}
