package stats

import (
	"math"
	"slices"
	"testing"
)

// TestRemoveCycle: a line plus a daily cycle of two harmonics, cut at
// different phases and after whole and broken numbers of days, comes back
// as the line; a slope fitted without removing the cycle leans.
func TestRemoveCycle(t *testing.T) {
	t.Parallel()
	for _, days := range []float64{2, 3, 3.2, 4.75, 14} {
		lean := 0.0
		for _, phase := range []float64{0, 0.2, 0.45, 0.8} {
			var xs, ys, line []float64
			for x := 0.0; x <= days; x += 1.0 / 288 {
				l := 1000 - 7*x
				xs = append(xs, x)
				line = append(line, l)
				ys = append(ys, l+40*math.Sin(2*math.Pi*(x+phase))+9*math.Cos(4*math.Pi*(x+phase)))
			}
			got := RemoveCycle(xs, ys, 1, 2)
			for i := range got {
				if math.Abs(got[i]-line[i]) > 1e-6 {
					t.Fatalf("%.2f days, phase %.2f: point %d is %v, want %v", days, phase, i, got[i], line[i])
				}
			}
			raw, _, _ := TheilSen(xs, ys)
			clean, _, _ := TheilSen(xs, got)
			if math.Abs(clean+7) > 1e-6 {
				t.Errorf("%.2f days, phase %.2f: slope %v after removing the cycle, want −7", days, phase, clean)
			}
			lean = max(lean, math.Abs(raw+7))
		}
		if days <= 3.2 && lean < 2 {
			t.Errorf("%.2f days: slopes within %v of −7 with the cycle left in: the case no longer shows the lean", days, lean)
		}
	}
}

// TestRemoveCycleEdges: points that are not finite stay and take no part;
// too few points, a bad period or no harmonics give a copy; different
// lengths panic.
func TestRemoveCycleEdges(t *testing.T) {
	t.Parallel()
	var xs, ys []float64
	for i := range 100 {
		x := float64(i) / 24
		xs = append(xs, x)
		ys = append(ys, 5+math.Sin(2*math.Pi*x))
	}
	ys[10], xs[20] = math.NaN(), math.Inf(1)
	got := RemoveCycle(xs, ys, 1, 1)
	if !math.IsNaN(got[10]) || got[20] != ys[20] {
		t.Errorf("not finite: got %v and %v, want them as they were", got[10], got[20])
	}
	for i, v := range got {
		if i != 10 && i != 20 && math.Abs(v-5) > 1e-9 {
			t.Fatalf("point %d: %v, want 5", i, v)
		}
	}
	short := []float64{1, 2, 3, 4}
	for _, c := range []struct {
		xs, ys    []float64
		period    float64
		harmonics int
	}{{short, short, 1, 1}, {xs, ys, 0, 1}, {xs, ys, 1, 0}} {
		out := RemoveCycle(c.xs, c.ys, c.period, c.harmonics)
		if !slices.EqualFunc(out, c.ys, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
			t.Errorf("period %v, harmonics %d, %d points: changed", c.period, c.harmonics, len(c.ys))
		}
		if len(out) > 0 && &out[0] == &c.ys[0] {
			t.Error("not a copy")
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("different lengths: no panic")
		}
	}()
	RemoveCycle([]float64{1, 2}, []float64{1}, 1, 1)
}
