package stats

import (
	"encoding/binary"
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
