package collect

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// randomSlabs is n caches of few distinct sizes (many ties).
func randomSlabs(r *rand.Rand, n int) []procfs.Slab {
	slabs := make([]procfs.Slab, n)
	for i := range slabs {
		slabs[i] = procfs.Slab{Name: "c" + string(rune('a'+i%26)), NumSlabs: int64(r.IntN(8)), PagesPerSlab: int64(1 << r.IntN(3))}
	}
	return slabs
}

// The caches whose reclaim flag is read are the n largest, largest first
// and, of equal sizes, in the order listed: a stable sort's first n.
func TestLargestSlabsAsStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 24, 25, 26, 300, 1400} {
		for _, k := range []int{0, 1, reclaimScan} {
			slabs := randomSlabs(r, n)
			idx := make([]int, n)
			for i := range idx {
				idx[i] = i
			}
			sort.SliceStable(idx, func(a, b int) bool {
				return slabs[idx[a]].NumSlabs*slabs[idx[a]].PagesPerSlab > slabs[idx[b]].NumSlabs*slabs[idx[b]].PagesPerSlab
			})
			want := idx[:min(n, k)]
			if got := largestSlabs(slabs, k); !slices.Equal(got, want) {
				t.Errorf("%d caches, %d largest: %v, want %v", n, k, got, want)
			}
		}
	}
}

func BenchmarkLargestSlabs(b *testing.B) {
	slabs := randomSlabs(rand.New(rand.NewPCG(3, 4)), 240)
	b.ReportAllocs()
	for b.Loop() {
		largestSlabs(slabs, reclaimScan)
	}
}
