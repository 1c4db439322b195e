package diagnose

import (
	"slices"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// The series whose step minima or maxima a rule reads are series it
// loads (Needs or Reads), and WindowAggregates keeps exactly those
// aggregates for them.
func TestWindowAggregatesDeclared(t *testing.T) {
	keep := WindowAggregates(Rules())
	want := map[string]sample.Aggregates{}
	for _, r := range Rules() {
		m := r.Meta()
		loads := append([]string(nil), m.Reads...)
		for _, n := range m.Needs {
			loads = append(loads, n.Series)
		}
		for _, c := range []struct {
			names []string
			bit   sample.Aggregates
		}{{m.StepMin, sample.KeepMin}, {m.StepMax, sample.KeepMax}} {
			for _, n := range c.names {
				if !slices.Contains(loads, n) {
					t.Errorf("%s: reads the step aggregates of %s, which it does not load", m.ID, n)
				}
				want[n] |= c.bit
			}
		}
	}
	if len(keep) != len(want) || len(keep) == 0 {
		t.Fatalf("WindowAggregates %v, the rules declare %v", keep, want)
	}
	for n, k := range want {
		if keep[n] != k || k&sample.KeepMean != 0 {
			t.Errorf("%s: kept %b, declared %b", n, keep[n], k)
		}
	}
}

// ThinToEnds keeps, of a series, the first and last point of every
// segment (here two boots, and points before the first boot-time sample)
// and its own first and last: what within and lastValue give.
func TestThinToEnds(t *testing.T) {
	const minute = int64(60_000)
	w := &sample.Window{From: time.UnixMilli(0), To: time.UnixMilli(100 * minute), Step: time.Minute}
	bt := &sample.Series{Name: "node_boot_time_seconds"}
	x := &sample.Series{Name: "memdoctor_slabinfo_size_bytes", Labels: sample.L("slab", "kmalloc-64")}
	for i := int64(0); i <= 100; i++ {
		if i >= 5 && i != 60 && i != 61 { // boot time from minute 5; no sample at 60, 61
			boot := 0.0
			if i > 61 {
				boot = 3600 * 24
			}
			bt.Points = append(bt.Points, sample.Point{T: i * minute, V: boot})
		}
		if i%7 != 3 {
			x.Points = append(x.Points, sample.Point{T: i * minute, V: float64(i * i)})
			x.Min = append(x.Min, float64(i))
		}
	}
	w.Add(bt)
	w.Add(x)
	segs := model.Segments(w)
	if len(segs) != 2 {
		t.Fatalf("segments %v, want two", segs)
	}
	thin := model.ThinToEnds(w)(x)
	// minutes 0 (first), 5 and 58 (the first segment), 62 and 100 (the
	// second, and the last)
	if len(thin.Points) != 5 || len(thin.Min) != 5 || thin.Mean != nil || thin.Max != nil {
		t.Fatalf("kept %d points (%d minima, means %v, maxima %v): want 5, minima only", len(thin.Points), len(thin.Min), thin.Mean, thin.Max)
	}
	for _, sp := range segs {
		a, b := model.Within(x, sp), model.Within(thin, sp)
		if len(b) != 2 || a[0] != b[0] || a[len(a)-1] != b[1] {
			t.Errorf("segment %v: ends %v, want %v … %v", sp, b, a[0], a[len(a)-1])
		}
	}
	if thin.Points[0] != x.Points[0] || lastValue(thin) != lastValue(x) {
		t.Errorf("first %v last %v, want %v %v", thin.Points[0], lastValue(thin), x.Points[0], lastValue(x))
	}
	for i, p := range thin.Points {
		if thin.Min[i] != float64(p.T/minute) {
			t.Errorf("point %v kept with minimum %g", p, thin.Min[i])
		}
	}
}

// The series thinned to their ends are those only rules declaring
// EndsOnly load: the slab caches, which no other rule reads.
func TestWindowEndsOnly(t *testing.T) {
	ends := WindowEndsOnly(Rules())
	if !slices.Contains(ends, "memdoctor_slabinfo_size_bytes") {
		t.Errorf("WindowEndsOnly %v: want the slab cache sizes", ends)
	}
	for _, r := range Rules() {
		m := r.Meta()
		loads := append([]string(nil), m.Reads...)
		for _, n := range m.Needs {
			loads = append(loads, n.Series)
		}
		for _, n := range ends {
			if slices.Contains(loads, n) && !slices.Contains(m.EndsOnly, n) {
				t.Errorf("%s loads %s whole, yet it is thinned", m.ID, n)
			}
		}
		for _, n := range m.EndsOnly {
			if !slices.Contains(m.Reads, n) {
				t.Errorf("%s: EndsOnly %s is not in its Reads", m.ID, n)
			}
		}
	}
}
