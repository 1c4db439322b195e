package fleet

import (
	"testing"
	"time"

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

// TestCadvisorAs: each of cadvisor's memory series becomes the per-cgroup
// series the host collector writes for the same figure, with its labels;
// a reservation or limit of 0 (none) is left out, and a container's two
// cgroups are one series, the larger value at each time.
func TestCadvisorAs(t *testing.T) {
	n := newNodes()
	n.byNode["node-1"] = "node-1"
	cs := newContainerSet(n)
	label := func(id string) func(string) string {
		ls := map[string]string{"node": "node-1", "namespace": "shop", "pod": "web-1", "container": "app", "id": id}
		return func(k string) string { return ls[k] }
	}
	in := map[string]float64{
		"container_memory_working_set_bytes":            300,
		"container_memory_usage_bytes":                  400,
		"container_memory_rss":                          250,
		"container_memory_cache":                        150,
		"container_spec_memory_limit_bytes":             1000,
		"container_memory_mapped_file":                  20,
		"container_memory_swap":                         7,
		"container_memory_kernel_usage":                 30,
		"container_memory_failcnt":                      5,
		"container_spec_memory_reservation_limit_bytes": 0,
	}
	for name, v := range in {
		cs.addCadvisor(name, label("/kubepods/pod1/a"), []sample.Point{{T: 1000, V: v}})
		cs.addCadvisor(name, label("/kubepods/pod1/b"), []sample.Point{{T: 1000, V: v / 2}, {T: 2000, V: v}})
	}
	cs.addCadvisor("container_memory_not_a_figure", label("/kubepods/pod1/a"), []sample.Point{{T: 1000, V: 1}})
	ws := map[string]*sample.Window{}
	cs.writeTo(ws, time.UnixMilli(0), time.UnixMilli(3000), time.Second)
	w := ws["node-1"]
	if w == nil {
		t.Fatalf("no window for the node: %v", ws)
	}
	cg := "shop/web-1/app"
	want := []struct {
		name  string
		match []string
		v     float64
	}{
		{"memdoctor_cgroup_memory_working_set_bytes", nil, 300},
		{"memdoctor_cgroup_memory_usage_bytes", nil, 400},
		{"memdoctor_cgroup_memory_anon_bytes", nil, 250},
		{"memdoctor_cgroup_memory_file_bytes", nil, 150},
		{"memdoctor_cgroup_memory_limit_bytes", nil, 1000},
		{"memdoctor_cgroup_memory_stat", []string{"stat", "file_mapped"}, 20},
		{"memdoctor_cgroup_memory_swap_bytes", nil, 7},
		{"memdoctor_cgroup_memory_stat", []string{"stat", "kernel"}, 30},
		{"memdoctor_cgroup_memory_events_total", []string{"event", "max"}, 5},
		{"memdoctor_cgroup_memory_stat", []string{"stat", "inactive_file"}, 100},
	}
	for _, x := range want {
		s := w.Get(x.name, append([]string{"cgroup", cg}, x.match...)...)
		if s == nil || len(s.Points) != 2 || s.Points[0].V != x.v || s.Points[1].V != x.v {
			t.Errorf("%s%v: %+v; want %v at both times (the larger of the two cgroups)", x.name, x.match, s, x.v)
		}
	}
	if s := w.Get("memdoctor_cgroup_memory_low_bytes", "cgroup", cg); s != nil {
		t.Errorf("a reservation of 0 (none) became %+v", s)
	}
	if len(cadvisorAs) != len(in) {
		t.Errorf("cadvisorAs maps %d series; the test gives %d", len(cadvisorAs), len(in))
	}
}
