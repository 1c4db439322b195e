package model_test

import (
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// ThinToEnds keeps, of a series, the first and last point of every
// segment (here two boots, and points before the first boot-time sample)
// and its own first and last: what Within and the last value give.
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
	if thin.Points[0] != x.Points[0] || thin.Points[len(thin.Points)-1] != x.Points[len(x.Points)-1] {
		t.Errorf("first %v last %v, want %v %v", thin.Points[0], thin.Points[len(thin.Points)-1], x.Points[0], x.Points[len(x.Points)-1])
	}
	for i, p := range thin.Points {
		if thin.Min[i] != float64(p.T/minute) {
			t.Errorf("point %v kept with minimum %g", p, thin.Min[i])
		}
	}
}
