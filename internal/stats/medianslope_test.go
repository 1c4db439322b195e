package stats

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// allSlopesMedian is the median slope as TheilSen took it before
// medianSlope: selected among every pairwise slope.
func allSlopesMedian(x, y []float64) float64 {
	return quantile7(pairSlopes(x, y), 0.5)
}

func checkMedianSlope(t *testing.T, what string, x, y []float64) bool {
	t.Helper()
	got, ok := medianSlope(x, y)
	if !ok {
		return false
	}
	want := allSlopesMedian(x, y)
	if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
		t.Fatalf("%s: median slope %v, among all slopes %v", what, got, want)
	}
	return true
}

// The bracketed median slope is the one selected among all slopes, on the
// series the rules fit (1,000 points, trends, steps, plateaus, repeated
// values, equal times, huge values) and on random ones.
func TestMedianSlopeMatchesAllSlopes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	cases := map[string]func(i int) (float64, float64){
		"trend": func(i int) (float64, float64) {
			return float64(i) * 300e3, 8e9 - 4e3*float64(i) + 1e6*rng.NormFloat64()
		},
		"flat":         func(i int) (float64, float64) { return float64(i) * 300e3, 5e9 },
		"steps":        func(i int) (float64, float64) { return float64(i) * 300e3, float64(i/100) * 1e8 },
		"few values":   func(i int) (float64, float64) { return float64(i), float64(rng.IntN(3)) },
		"equal times":  func(i int) (float64, float64) { return float64(i / 3), rng.NormFloat64() },
		"huge":         func(i int) (float64, float64) { return float64(i), rng.NormFloat64() * 1e307 },
		"tiny dx":      func(i int) (float64, float64) { return 1 + float64(i)*1e-15, rng.NormFloat64() * 1e300 },
		"spikes":       func(i int) (float64, float64) { return float64(i) * 15, float64(i%97) * float64(i%89) },
		"unsorted x":   func(i int) (float64, float64) { return float64(rng.IntN(2000)), float64(i) },
		"odd pairs":    func(i int) (float64, float64) { return float64(i), math.Sin(float64(i)) },
		"half plateau": func(i int) (float64, float64) { return float64(i), math.Max(0, float64(i-500)) },
	}
	used := 0
	for name, f := range cases {
		for _, n := range []int{999, 1000, 1001, 200} {
			x, y := make([]float64, n), make([]float64, n)
			for i := range n {
				x[i], y[i] = f(i)
			}
			if checkMedianSlope(t, name, x, y) {
				used++
			}
		}
	}
	if used < 30 {
		t.Errorf("the bracket held in only %d of 44 cases", used)
	}
}

// FuzzMedianSlope: whenever the bracket holds, the median slope is the
// one selected among all slopes.
func FuzzMedianSlope(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint16(300))
	f.Fuzz(func(t *testing.T, seed []byte, n uint16) {
		if len(seed) == 0 || n > 1200 {
			return
		}
		x, y := make([]float64, n), make([]float64, n)
		for i := range int(n) {
			b := seed[i%len(seed)]
			x[i] = float64(i/(1+int(b%4))) + float64(b>>6)
			var raw [8]byte
			binary.LittleEndian.PutUint64(raw[:], uint64(i)*0x9e3779b97f4a7c15^uint64(b))
			y[i] = float64(int8(raw[int(b)%8])) * math.Pow(10, float64(b%40))
		}
		checkMedianSlope(t, "fuzz", x, y)
	})
}

// A fit of 1,000 points, the most a rule fits, holds the slopes near the
// median only: well under the 4 MB of all 499,500 of them.
func TestTheilSenScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	x, y := make([]float64, 1000), make([]float64, 1000)
	for i := range x {
		x[i] = float64(i) * 300e3
		y[i] = 8e9 - 4e3*float64(i) + 1e6*rng.NormFloat64()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, ok := TheilSen(x, y); !ok {
		t.Fatal("no fit")
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("a fit of 1,000 points allocated %d bytes, want at most 1 MiB", got)
	}
}

// slopeSeries are the kinds of series the exact selection is checked on.
// Each returns n points drawn from rng.
var slopeSeries = map[string]func(rng *rand.Rand, n int) (x, y []float64){
	"ms timestamps, noisy trend": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) {
			return 1.7e12 + float64(i)*15e3, 8e9 - 0.5*float64(i)*15e3 + 1e6*rng.NormFloat64()
		})
	},
	"ms timestamps, KiB gauge": func(rng *rand.Rand, n int) (x, y []float64) {
		v := 1 << 20
		return series(n, func(i int) (float64, float64) {
			v += rng.IntN(7) - 3
			return 1.7e12 + float64(i)*30e3, float64(v) * 1024
		})
	},
	"ms timestamps, jittered": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) {
			return 1.7e12 + float64(i)*15e3 + float64(rng.IntN(40)), 3e9 + 1e3*float64(i) + 1e7*rng.NormFloat64()
		})
	},
	"x ties": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) { return float64(i / 4), rng.NormFloat64() + float64(i)*0.01 })
	},
	"x mostly one value": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(int) (float64, float64) { return float64(rng.IntN(2) * rng.IntN(30)), rng.NormFloat64() })
	},
	"y ties": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) { return float64(i), float64(rng.IntN(4)) })
	},
	"y constant": func(_ *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) { return float64(i) * 60e3, 4096 })
	},
	"linear": func(_ *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) { return float64(i) * 15e3, 1024 * float64(i) })
	},
	"step": func(_ *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) {
			if i > n/3 {
				return float64(i), 2e9
			}
			return float64(i), 1e9
		})
	},
	"plateaus": func(_ *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) { return float64(i) * 10, float64(i/50) * 4096 })
	},
	"sine and noise": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) {
			return float64(i), math.Sin(float64(i)/20) + 0.3*rng.NormFloat64()
		})
	},
	"near overflow": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) { return float64(i) * 1e-3, rng.NormFloat64() * 1e307 })
	},
	"tiny dx": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) { return 1 + float64(i)*1e-15, rng.NormFloat64() * 1e300 })
	},
	"unsorted x": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(int) (float64, float64) { return rng.Float64() * 1e6, float64(rng.IntN(1000)) })
	},
	"outliers": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) {
			v := 5 + 0.1*float64(i) + rng.NormFloat64()
			if rng.IntN(5) == 0 {
				v = rng.NormFloat64() * 1e12
			}
			return float64(i), v
		})
	},
	"subnormal": func(rng *rand.Rand, n int) (x, y []float64) {
		return series(n, func(i int) (float64, float64) { return float64(i) * 1e150, rng.NormFloat64() * 1e-160 })
	},
}

func series(n int, f func(i int) (float64, float64)) (x, y []float64) {
	x, y = make([]float64, n), make([]float64, n)
	for i := range n {
		x[i], y[i] = f(i)
	}
	return x, y
}

// checkSelectSlope compares selectSlope's median with the one among all
// slopes; it reports whether selectSlope answered.
func checkSelectSlope(t *testing.T, what string, x, y []float64) bool {
	t.Helper()
	got, ok := selectSlope(x, y, medianRank)
	if !ok {
		return false
	}
	want := allSlopesMedian(x, y)
	if got != want {
		t.Fatalf("%s, n = %d: selectSlope %v (%#x), among all slopes %v (%#x)",
			what, len(x), got, math.Float64bits(got), want, math.Float64bits(want))
	}
	return true
}

// The exact selection gives the median among all slopes on every kind of
// series, sizes 2 to 1,500, and vouches for its answer on almost all of
// those with enough pairs.
func TestSelectSlopeMatchesAllSlopes(t *testing.T) {
	sizes := []int{2, 3, 10, 45, 46, 47, 100, 257, 500, 999, 1000, 1500}
	if testing.Short() {
		sizes = sizes[:10]
	}
	tried, answered := 0, 0
	for name, gen := range slopeSeries {
		for _, n := range sizes {
			for rep := range 2 {
				x, y := gen(rand.New(rand.NewPCG(uint64(n), uint64(rep))), n)
				ans := checkSelectSlope(t, name, x, y)
				if n*(n-1)/2 >= 4*selMinPairs {
					tried++
					if ans {
						answered++
					}
				}
			}
		}
	}
	t.Logf("selectSlope answered %d of %d fits with enough pairs", answered, tried)
	if answered < tried*8/10 {
		t.Errorf("selectSlope answered only %d of %d fits with enough pairs", answered, tried)
	}
}

// fuzzSeries builds a series of n points from a seed and a choice of x and
// y patterns: the spacing of timestamps, ties, unsorted x, integer and
// KiB-valued y, runs of equal values, huge and tiny values, zeros of both
// signs, and (raw) any float64 including NaN and ±Inf.
func fuzzSeries(seed uint64, n int, xKind, yKind uint8) (x, y []float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(xKind)<<8|uint64(yKind)))
	x, y = make([]float64, n), make([]float64, n)
	step := float64(1 + rng.IntN(60000))
	run := 1 + rng.IntN(8)
	level := 0.0
	for i := range n {
		switch xKind % 7 {
		case 0: // Unix milliseconds at a step
			x[i] = 1.7e12 + float64(i)*step
		case 1: // equal times in runs
			x[i] = float64(i / run)
		case 2: // unsorted, with repeats
			x[i] = float64(rng.IntN(n/2 + 1))
		case 3: // unsorted reals
			x[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3))
		case 4: // a handful of values
			x[i] = float64(rng.IntN(3))
		case 5: // zeros of both signs and a few values
			x[i] = [...]float64{math.Copysign(0, -1), 0, 1, 2, 3}[rng.IntN(5)]
		default: // any float64
			x[i] = math.Float64frombits(rng.Uint64())
		}
		switch yKind % 10 {
		case 0: // noisy trend
			y[i] = 1e9 + 1e3*float64(i) + 1e6*rng.NormFloat64()
		case 1: // KiB gauge, random walk
			level += float64(rng.IntN(5) - 2)
			y[i] = 1024 * level
		case 2: // few values
			y[i] = float64(rng.IntN(3))
		case 3: // constant
			y[i] = 4096
		case 4: // step
			if i > n/3 {
				y[i] = 2e9
			} else {
				y[i] = 1e9
			}
		case 5: // sine and noise
			y[i] = math.Sin(float64(i)/10) + 0.1*rng.NormFloat64()
		case 6: // huge
			y[i] = rng.NormFloat64() * 1e307
		case 7: // outliers on a line
			y[i] = 0.5 * float64(i)
			if rng.IntN(4) == 0 {
				y[i] = rng.NormFloat64() * 1e15
			}
		case 8: // zeros of both signs, and ±1
			y[i] = [...]float64{math.Copysign(0, -1), 0, 0, 1, -1}[rng.IntN(5)]
		default: // any float64
			y[i] = math.Float64frombits(rng.Uint64())
		}
	}
	return x, y
}

// sameSlope is got == want, except that the sign of a zero median is
// whichever zero the selection meets first and may differ.
func sameSlope(got, want float64) bool {
	return math.Float64bits(got) == math.Float64bits(want) ||
		(got == 0 && want == 0) || (math.IsNaN(got) && math.IsNaN(want))
}

// checkAgainstAllSlopes checks TheilSen's and selectSlope's median slopes
// against the median of all slopes, bit for bit.
func checkAgainstAllSlopes(t *testing.T, what string, xs, ys []float64) {
	t.Helper()
	x, y := finitePairs(xs, ys)
	all := pairSlopes(x, y)
	if len(all) == 0 {
		if _, _, ok := TheilSen(xs, ys); ok {
			t.Fatalf("%s: a fit without slopes", what)
		}
		return
	}
	want := quantile7(all, 0.5)
	if got, ok := selectSlope(x, y, medianRank); ok && !sameSlope(got, want) {
		t.Fatalf("%s, n = %d: selectSlope %v (%#x), among all slopes %v (%#x)",
			what, len(x), got, math.Float64bits(got), want, math.Float64bits(want))
	}
	if got, _, ok := TheilSen(xs, ys); !sameSlope(got, want) || ok == math.IsNaN(want) {
		t.Fatalf("%s, n = %d: TheilSen slope %v (%#x, ok %v), among all slopes %v (%#x)",
			what, len(x), got, math.Float64bits(got), ok, want, math.Float64bits(want))
	}
}

// Every combination of x and y pattern, at sizes from 2 to 1,500.
func TestTheilSenSlopeMatchesAllSlopes(t *testing.T) {
	sizes := []int{2, 5, 46, 150, 400, 1001, 1500}
	if testing.Short() {
		sizes = sizes[:5]
	}
	for xk := range uint8(7) {
		for yk := range uint8(10) {
			for _, n := range sizes {
				x, y := fuzzSeries(uint64(n), n, xk, yk)
				checkAgainstAllSlopes(t, fmt.Sprintf("x kind %d, y kind %d", xk, yk), x, y)
			}
		}
	}
}

func FuzzTheilSenSlope(f *testing.F) {
	for k := range uint8(70) {
		f.Add(uint64(k), 300+uint16(k), k%7, k%10)
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, xKind, yKind uint8) {
		if n > 1500 {
			n %= 1501
		}
		x, y := fuzzSeries(seed, int(n), xKind, yKind)
		checkAgainstAllSlopes(t, "fuzz", x, y)
	})
}

// With N even the median is halfway between the N/2-th and N/2+1-th
// slopes. A step at (n − √n)/2 of n points on a line makes the N/2
// smallest slopes the line's (equal, within each side of the step) and
// the next one the shallowest across the step, so both the run of equal
// slopes and the slope after it are read. With a flat line the run is of
// zeros (counted by merge sort), with a rising one of 1024/15000 (counted
// by a pass over all pairs).
func TestSelectSlopeRunEndsAtMedian(t *testing.T) {
	for _, rise := range []float64{0, 1024} {
		for _, n := range []int{400, 900} {
			p := (n - int(math.Sqrt(float64(n)))) / 2
			x, y := series(n, func(i int) (float64, float64) {
				v := rise * float64(i)
				if i >= p {
					v += 1 << 20
				}
				return 1.7e12 + float64(i)*15e3, v
			})
			if total := n * (n - 1) / 2; total%2 != 0 || p*(n-p) != total/2 {
				t.Fatalf("n = %d: the step at %d does not split the slopes in half", n, p)
			}
			what := fmt.Sprintf("step at %d of %d on a line rising %v", p, n, rise)
			if !checkSelectSlope(t, what, x, y) {
				t.Errorf("%s: selectSlope did not answer", what)
			}
			// Every point twice: the pairs of equal x do not count, the
			// others four times.
			x, y = append(x, x...), append(y, y...)
			what += ", each point twice"
			if !checkSelectSlope(t, what, x, y) {
				t.Errorf("%s: selectSlope did not answer", what)
			}
		}
	}
}

// When nearly all points share one x, few random pairs have distinct x:
// the first round draws them by the Fenwick tree instead.
func TestSelectSlopeMostlyEqualX(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	x, y := series(1000, func(i int) (float64, float64) {
		if i%20 == 0 {
			return float64(i), rng.NormFloat64()
		}
		return 500, rng.NormFloat64()
	})
	if !checkSelectSlope(t, "x mostly 500", x, y) {
		t.Error("selectSlope did not answer")
	}
}

// A cut's bounds hold for every pair, on series whose keys y − t·x are
// large beside their differences (a large y offset, timestamps 1 ms
// apart), at thresholds that are slopes of pairs: there the rounded keys
// put pairs on the wrong side of t, which the bounds must cover. And a cut
// never puts first the later of two points of equal x, even when their
// keys are zeros of opposite signs (y = ±0 at t = 0).
func TestCutBounds(t *testing.T) {
	misplaced := 0
	negZero := math.Copysign(0, -1)
	for _, yOff := range []float64{0, 1e12, 4e15, negZero} {
		rng := rand.New(rand.NewPCG(11, uint64(yOff)))
		x, y := series(300, func(i int) (float64, float64) {
			if yOff == 0 && math.Signbit(yOff) {
				// Zeros of both signs at a few x.
				return float64(1 + i%7), [...]float64{negZero, 0, 1}[rng.IntN(3)]
			}
			return 1.7e12 + float64(i) + float64(rng.IntN(3)), yOff + 3*float64(i) + rng.NormFloat64()
		})
		s, _ := newSlopeSel(x, y)
		c := s.newCut()
		for cut := range 21 {
			a, b := int32(rng.IntN(s.n)), int32(rng.IntN(s.n))
			if cut > 0 && s.x[a] == s.x[b] {
				continue
			}
			tc := 0.0
			if cut > 0 {
				tc = s.slope(a, b)
			}
			if !s.setCut(c, tc, s.minusInf()) {
				t.Fatalf("no cut at %v", tc)
			}
			below := 0
			for a := range int32(s.n) {
				for b := a + 1; b < int32(s.n); b++ {
					if s.x[a] == s.x[b] {
						if c.pos[b] < c.pos[a] {
							t.Fatalf("the cut at %v puts (%v, %v) before (%v, %v)", tc, s.x[b], s.y[b], s.x[a], s.y[a])
						}
						continue
					}
					f := s.slope(a, b)
					if c.pos[b] < c.pos[a] {
						below++
						if f > c.maxBelow {
							t.Fatalf("y offset %g, cut at %v: slope %v put below, above the bound %v", yOff, tc, f, c.maxBelow)
						}
						if f >= tc {
							misplaced++
						}
					} else {
						if f < c.minAbove {
							t.Fatalf("y offset %g, cut at %v: slope %v put above, below the bound %v", yOff, tc, f, c.minAbove)
						}
						if f < tc {
							misplaced++
						}
					}
				}
			}
			if below != c.below {
				t.Fatalf("cut at %v: %d pairs below, counted %d", tc, below, c.below)
			}
		}
	}
	if misplaced == 0 {
		t.Error("no pair was on the wrong side of its cut: the bounds went untested")
	}
	t.Logf("%d pairs on the wrong side of their cut", misplaced)
}

// The median of six slopes is halfway between the third and the fourth:
// here −Inf and −1.4e308, which is NaN. TheilSen reports no fit (it
// panicked taking the median of no residuals).
func TestTheilSenMedianBetweenInfinities(t *testing.T) {
	x := []float64{0.0007134697709508808, 0.022143194155240988, -0.006832574790091506, 0.011820167253343783}
	y := []float64{-1.0454056287853089e+307, -1.142287294604652e+307, -9.483513738220078e+305, -1.2043193449651657e+307}
	if m := allSlopesMedian(x, y); !math.IsNaN(m) {
		t.Fatalf("the median of %v is %v, want NaN", pairSlopes(x, y), m)
	}
	if s, i, ok := TheilSen(x, y); ok || !math.IsNaN(s) || !math.IsNaN(i) {
		t.Errorf("TheilSen = %v, %v, %v; want NaN, NaN, false", s, i, ok)
	}
}
