package compare

import (
	"encoding/json"
	"strings"
	"testing"
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
