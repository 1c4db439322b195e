package model

import (
	"math"
	"testing"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// A runtime's GC series split by its pid label (its process in the
// reported top N for some samples, not for others) is judged as one: the
// whole window's share, and every part of it. Judged by its first piece,
// as before, two points of the ten decided, or none.
func TestWindowGCJoinsSeriesSplitByPID(t *testing.T) {
	t.Parallel()
	const target = "http://127.0.0.1:9/metrics"
	with := sample.L("target", target, "runtime", "go", "pid", "42", "comm", "svc")
	without := sample.L("target", target, "runtime", "go")
	w := &sample.Window{}
	gc := map[string]*sample.Series{}
	cycles := map[string]*sample.Series{}
	for i := 0; i <= 10; i++ {
		ls := without
		if i%3 == 1 {
			ls = with
		}
		k := ls.String()
		if gc[k] == nil {
			gc[k] = &sample.Series{Name: RTGCSeconds, Labels: ls}
			cycles[k] = &sample.Series{Name: RTColl, Labels: append(append(sample.Labels{}, ls...), sample.L("generation", "full")...)}
			w.Add(gc[k])
			w.Add(cycles[k])
		}
		at := int64(i) * 1000
		// 0.3 s of GC in every second, 20 cycles a second
		gc[k].Points = append(gc[k].Points, sample.Point{T: at, V: 0.3 * float64(i)})
		cycles[k].Points = append(cycles[k].Points, sample.Point{T: at, V: 20 * float64(i)})
	}
	if len(w.Select(RTGCSeconds, "target", target)) != 2 {
		t.Fatal("the window should hold the GC series in two pieces")
	}
	g := windowGC(w, target)
	if g == nil || g.GCTimeShare == nil || g.PartsAboveGCThreshold == nil {
		t.Fatalf("no GC rates from the split series: %+v", g)
	}
	if math.Abs(*g.GCTimeShare-0.3) > 1e-9 || math.Abs(g.GCSeconds-3) > 1e-9 || *g.PartsAboveGCThreshold != 1 {
		t.Errorf("share %v, GC seconds %v, parts above %v; want 0.3, 3, 1", *g.GCTimeShare, g.GCSeconds, *g.PartsAboveGCThreshold)
	}
	if g.Full != 200 || g.Seconds != 10 {
		t.Errorf("full collections %v over %v s, want 200 over 10", g.Full, g.Seconds)
	}
}
