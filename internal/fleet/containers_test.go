package fleet

import (
	"testing"

	"github.com/memdoctor/memdoctor/internal/sample"
)

func pts(vs ...float64) []sample.Point {
	out := make([]sample.Point, len(vs))
	for i, v := range vs {
		out[i] = sample.Point{T: int64(i), V: v}
	}
	return out
}

// TestOOMKills: a container's kill counter over its cgroups and
// kube-state-metrics' restarts: the larger count, counters that restart
// with a new cgroup, restarts for other reasons not counted.
func TestOOMKills(t *testing.T) {
	times := []int64{0, 1, 2, 3, 4, 5}
	last := func(ps []sample.Point) float64 { return ps[len(ps)-1].V }
	cases := []struct {
		name string
		ct   container
		want float64
	}{
		{"cadvisor, two cgroups", container{oom: [][]sample.Point{pts(0, 1, 1), {{T: 3, V: 0}, {T: 4, V: 2}, {T: 5, V: 2}}}}, 3},
		{"a restart that was not an OOM kill", container{restarts: [][]sample.Point{pts(0, 0, 1, 1, 2, 2)}, oomReason: map[int64]bool{4: true, 5: true}}, 1},
		{"the reason alone, no restart counter", container{oomReason: map[int64]bool{0: true, 3: true, 4: true}}, 1},
		{"both sources: the larger", container{oom: [][]sample.Point{pts(0, 0, 1, 1, 1, 1)}, restarts: [][]sample.Point{pts(0, 0, 1, 1, 2, 2)},
			oomReason: map[int64]bool{2: true, 3: true, 4: true, 5: true}}, 2},
	}
	for _, c := range cases {
		ps := oomKills(&c.ct, times)
		if ps == nil || last(ps) != c.want {
			t.Errorf("%s: %v; want %v kills", c.name, ps, c.want)
		}
		for i := 1; i < len(ps); i++ {
			if ps[i].V < ps[i-1].V {
				t.Errorf("%s: the counter drops: %v", c.name, ps)
			}
		}
	}
	if ps := oomKills(&container{}, times); ps != nil {
		t.Errorf("no source: %v; want no series", ps)
	}
}
