package model

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// slabSnapshot is n caches of random sizes (many equal: sizes are drawn
// from few values), as the collector writes them.
func slabSnapshot(r *rand.Rand, n int) *sample.Snapshot {
	s := &sample.Snapshot{}
	s.Add("node_memory_MemTotal_bytes", 8<<30)
	for i := range n {
		name := "cache-" + strconv.Itoa(i)
		objs, sz := float64(r.IntN(50)*100), float64(int(8)<<r.IntN(6))
		s.Add("node_slabinfo_objects", objs, "slab", name)
		s.Add("node_slabinfo_active_objects", objs/2, "slab", name)
		s.Add("node_slabinfo_object_size_bytes", sz, "slab", name)
		if r.IntN(3) > 0 { // node_exporter's data has no size of its own
			s.Add("memdoctor_slabinfo_size_bytes", objs*sz+float64(r.IntN(2)*4096), "slab", name)
		}
		if r.IntN(2) == 0 {
			s.Add("memdoctor_slabinfo_reclaimable", float64(r.IntN(2)), "slab", name)
		}
	}
	return s
}

// The report's caches are the largest slabTop, largest first and, of
// equal sizes, in the order read: what sorting them all (stable) and
// keeping the first slabTop gives.
func TestSlabTopAsStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, slabTop - 1, slabTop, slabTop + 1, 200, 1400} {
		s := slabSnapshot(r, n)
		got := slab(s).Top
		var all []SlabCache
		for m := range s.Each("node_slabinfo_objects") {
			name := m.Labels.Get("slab")
			c := SlabCache{Name: name, Objects: int64(m.Value),
				ActiveObjects:   int64(s.Value("node_slabinfo_active_objects", "slab", name)),
				ObjectSizeBytes: int64(s.Value("node_slabinfo_object_size_bytes", "slab", name))}
			if b, ok := s.Get("memdoctor_slabinfo_size_bytes", "slab", name); ok {
				c.Bytes = int64(b)
			} else {
				c.Bytes = c.Objects * c.ObjectSizeBytes
			}
			if v, ok := s.Get("memdoctor_slabinfo_reclaimable", "slab", name); ok {
				b := v == 1
				c.Reclaimable = &b
			}
			all = append(all, c)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].Bytes > all[j].Bytes })
		want := all[:min(len(all), slabTop)]
		if len(got) != len(want) {
			t.Fatalf("%d caches: %d listed, want %d", n, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Name != w.Name || g.Bytes != w.Bytes || g.Objects != w.Objects || g.ActiveObjects != w.ActiveObjects ||
				g.ObjectSizeBytes != w.ObjectSizeBytes || (g.Reclaimable == nil) != (w.Reclaimable == nil) ||
				g.Reclaimable != nil && *g.Reclaimable != *w.Reclaimable {
				t.Errorf("%d caches, #%d: %+v, want %+v", n, i, g, w)
			}
		}
	}
}

func BenchmarkSlab(b *testing.B) {
	s := slabSnapshot(rand.New(rand.NewPCG(1, 2)), 240)
	b.ReportAllocs()
	for b.Loop() {
		slab(s)
	}
}
