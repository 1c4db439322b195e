package compare

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/sample"
)

func TestCompareVerdicts(t *testing.T) {
	hosts := func(base, step float64, n int) map[string]float64 {
		m := map[string]float64{}
		for i := range n {
			m[string(rune('a'+i))] = base + step*float64(i%5)
		}
		return m
	}
	a := Values{"available_memory": hosts(30e9, 1e8, 20), "slab_unreclaimable_growth_per_day": hosts(0, 1e6, 20)}
	b := Values{"available_memory": hosts(30e9, 1e8, 20), "slab_unreclaimable_growth_per_day": hosts(4e8, 1e7, 20)}
	r := Compare("control", "experiment", "host", a, b)
	if len(r.Rows) != 2 {
		t.Fatalf("rows %+v", r.Rows)
	}
	for _, row := range r.Rows {
		switch row.ID {
		case "slab_unreclaimable_growth_per_day":
			if !row.Real || row.Lo <= 0 || !strings.HasPrefix(row.Verdict, "B is higher") {
				t.Errorf("growth: %+v", row)
			}
		case "available_memory":
			if row.Real || !strings.HasPrefix(row.Verdict, "no clear difference") {
				t.Errorf("same memory: %+v", row)
			}
		}
	}
	// One host per group: a difference, but no interval, and valid JSON.
	one := Compare("a", "b", "host", Values{"available_memory": {"x": 1e9}}, Values{"available_memory": {"y": 2e9}})
	if row := one.Rows[0]; row.Interval || row.Real || !strings.Contains(row.Verdict, "no interval") {
		t.Errorf("single hosts: %+v", row)
	}
	if _, err := json.Marshal(one); err != nil {
		t.Error(err)
	}
	// A metric only one group has is a note, not a row.
	half := Compare("a", "b", "host", Values{"process_uss": {"x": 1}}, Values{})
	if len(half.Rows) != 0 || len(half.Notes) != 1 {
		t.Errorf("%+v", half)
	}
}

// NaN and infinite values (a hostile file, a series that is not a size)
// are left out with a note naming the group, host and series; the result
// is valid JSON. Before, +Inf failed compare --json with "json:
// unsupported value: +Inf".
func TestCompareNonFinite(t *testing.T) {
	day := int64(86400000)
	win := func(inst string, bad float64) *sample.Window {
		s := &sample.Series{Name: "node_memory_MemAvailable_bytes"}
		for i := range 48 {
			v := 8e9 - float64(i)*1e6
			if i == 20 {
				v = bad
			}
			s.Points = append(s.Points, sample.Point{T: 1700000000000 + int64(i)*day/24, V: v})
		}
		w := &sample.Window{Instance: inst}
		w.Add(s)
		return w
	}
	for _, bad := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		a, b := []*sample.Window{win("h1", 7e9)}, []*sample.Window{win("h2", bad)}
		r := Compare("a", "b", "day", FromWindows(a, true), FromWindows(b, true))
		r.Notes = append(r.Notes, NonFinite("B", b)...)
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%v: %v", bad, err)
		}
		if len(r.Rows) != 1 {
			t.Fatalf("%v: rows %+v", bad, r.Rows)
		}
		for _, v := range r.Rows[0].B {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("%v: a value of B is %v", bad, v)
			}
		}
		if !strings.Contains(strings.Join(r.Notes, "\n"), "group B, h2: 1 point of node_memory_MemAvailable_bytes is NaN or infinite, left out") {
			t.Errorf("%v: notes %q", bad, r.Notes)
		}
	}
	// Values from any source: a non-finite one is a note, never a row value.
	r := Compare("a", "b", "host", Values{"available_memory": {"x": 1e9, "z": math.Inf(1)}}, Values{"available_memory": {"y": math.NaN()}})
	if _, err := json.Marshal(r); err != nil {
		t.Error(err)
	}
	if len(r.Notes) != 3 || !strings.Contains(r.Notes[0], "group A, z is +Inf") || !strings.Contains(r.Notes[1], "group B, y is NaN") {
		t.Errorf("notes %q", r.Notes)
	}
}
