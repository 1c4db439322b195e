package cgtrace

import (
	"testing"
	"time"
)

// The reclaim stalls of one name and cgroup sum up, the p99 is the nearest
// rank (one slow stall in a hundred is the p99, not above it), and each
// kind and cgroup is its own row, most time first.
func TestStallAggregation(t *testing.T) {
	t.Parallel()
	a := newAggregator(Options{Proc: t.TempDir()}) // no /proc: cgroups unknown
	for i := 1; i <= 99; i++ {
		a.addStall(DirectReclaim, 1, "burst", 0, time.Duration(i)*time.Microsecond, 32)
	}
	a.addStall(DirectReclaim, 1, "burst", 0, 50*time.Millisecond, 32)
	a.addStall(MemcgReclaim, 1, "burst", 0, 2*time.Millisecond, 8)
	a.addStall(DirectReclaim, 2, "reader", 0, time.Millisecond, 4)
	s := a.summary("bpf", time.Second, 0)
	if len(s.Stalls) != 3 {
		t.Fatalf("stalls %+v", s.Stalls)
	}
	b := s.Stalls[0]
	if b.Kind != "direct" || b.Comm != "burst" || b.Count != 100 || b.Reclaimed != 3200 {
		t.Errorf("first row %+v", b)
	}
	if want := 4950*time.Microsecond + 50*time.Millisecond; b.Total != want {
		t.Errorf("total %v, want %v", b.Total, want)
	}
	if b.P99 != 99*time.Microsecond || b.Max != 50*time.Millisecond {
		t.Errorf("p99 %v max %v, want 99µs and 50ms", b.P99, b.Max)
	}
	if s.Stalls[1].Kind != "memcg" || s.Stalls[2].Comm != "reader" {
		t.Errorf("order: %+v", s.Stalls)
	}
	for _, d := range []struct {
		in   []time.Duration
		want time.Duration
	}{{nil, 0}, {[]time.Duration{7}, 7}, {[]time.Duration{3, 1, 2}, 3}} {
		if got := p99(d.in); got != d.want {
			t.Errorf("p99(%v) = %v, want %v", d.in, got, d.want)
		}
	}
}
