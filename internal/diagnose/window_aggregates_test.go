package diagnose

import (
	"slices"
	"testing"

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
