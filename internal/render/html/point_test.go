package html

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// A series seen in one sample only (a process that lived between two
// samples) is drawn as a short tick, not as a path of no length that no
// browser shows; a series of two samples stays a plain line.
func TestDrawChartLonePoint(t *testing.T) {
	from, to := int64(0), int64(600_000)
	c := Chart{ID: "t", Title: "t", Unit: "bytes", Lines: []Line{
		{Expr: "lone", Label: "lone", Points: []sample.Point{{T: 300_000, V: 5}}},
		{Expr: "pair", Label: "pair", Points: []sample.Point{{T: 100_000, V: 1}, {T: 110_000, V: 2}}},
	}}
	v := drawChart(c, from, to, "")
	got := map[string]string{}
	for _, p := range v.Paths {
		got[p.Expr] = p.D
	}
	if d := got["lone"]; !strings.HasPrefix(d, "M") || strings.Count(d, "L") != 1 {
		t.Errorf("lone point drawn as %q, want M x y L x+1 y", d)
	}
	if d := got["pair"]; strings.Count(d, "M") != 1 || strings.Count(d, "L") != 1 {
		t.Errorf("two points drawn as %q, want one segment", d)
	}
}
