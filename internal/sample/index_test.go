package sample

import (
	"strconv"
	"testing"
)

// checkLike is a snapshot shaped as check's on a quiet host: 236 slab
// caches' six series, each name's together, and 700 more series of 380
// names.
func checkLike() *Snapshot {
	s := &Snapshot{}
	names := []string{"node_slabinfo_active_objects", "node_slabinfo_objects", "node_slabinfo_object_size_bytes",
		"node_slabinfo_objects_per_slab", "node_slabinfo_pages_per_slab", "memdoctor_slabinfo_size_bytes"}
	for _, n := range names {
		for i := range 236 {
			s.Add(n, float64(i), "slab", "cache-"+strconv.Itoa(i))
		}
	}
	for i := range 700 {
		s.Add("memdoctor_series_"+strconv.Itoa(i%380), float64(i), "n", strconv.Itoa(i))
	}
	return s
}

// The index lists every metric of a name, in the order added, whether a
// name's metrics come together or not.
func TestIndexEveryMetricInOrder(t *testing.T) {
	s := checkLike()
	s.Add("node_slabinfo_objects", 1, "slab", "late") // a name met again after others
	s.build()
	n := 0
	for name, idx := range s.index {
		n += len(idx)
		for j, i := range idx {
			if s.Metrics[i].Name != name || j > 0 && idx[j-1] >= i {
				t.Fatalf("index of %s: %v", name, idx)
			}
		}
	}
	if n != len(s.Metrics) {
		t.Fatalf("the index holds %d metrics of %d", n, len(s.Metrics))
	}
	if got := s.Count("node_slabinfo_objects"); got != 237 {
		t.Errorf("node_slabinfo_objects: %d, want 237", got)
	}
}

func BenchmarkIndex(b *testing.B) {
	s := checkLike()
	b.ReportAllocs()
	for b.Loop() {
		s.index = nil
		s.build()
	}
}
