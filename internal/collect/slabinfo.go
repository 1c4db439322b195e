package collect

import (
	"slices"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

func init() { register(80, "slabinfo", false, collectSlabinfo) }

// reclaimScan is how many of the largest caches get their SLAB_RECLAIM_ACCOUNT
// flag read from /sys/kernel/slab (one small sysfs read each).
const reclaimScan = 25

// slabHeadroom is room for the metrics added after the slab caches' (the
// top processes', cgroups', runtimes': some 600 on a quiet host).
const slabHeadroom = 1024

func collectSlabinfo(c *ctx) error {
	collectAllocinfo(c)
	slabs, err := c.fs.Slabinfo()
	if err != nil {
		if isPerm(err) {
			c.note("proc/slabinfo", "slab caches unreadable: permission denied (root only)",
				"which slab caches hold SUnreclaim/SReclaimable; totals from meminfo are still shown",
				"run as root")
			return nil
		}
		return err
	}
	ps := float64(c.fs.PageSize)
	// Six metrics a cache, most of a snapshot's: room for them and for
	// the collectors after this one at once (grown by doubling, the
	// snapshot was its final size again in garbage), and one label set a
	// cache shared by its six (labels are never changed in place).
	snap := &c.res.Snapshot
	snap.Metrics = slices.Grow(snap.Metrics, 6*len(slabs)+slabHeadroom)
	// A name's series together, as an exposition groups them and as the
	// snapshot indexes them fastest.
	ls := make([]sample.Labels, len(slabs))
	for i := range slabs {
		ls[i] = sample.L("slab", slabs[i].Name)
	}
	for _, series := range []struct {
		name  string
		value func(*procfs.Slab) float64
	}{
		{"node_slabinfo_active_objects", func(s *procfs.Slab) float64 { return float64(s.ActiveObjs) }},
		{"node_slabinfo_objects", func(s *procfs.Slab) float64 { return float64(s.NumObjs) }},
		{"node_slabinfo_object_size_bytes", func(s *procfs.Slab) float64 { return float64(s.ObjSize) }},
		{"node_slabinfo_objects_per_slab", func(s *procfs.Slab) float64 { return float64(s.ObjPerSlab) }},
		{"node_slabinfo_pages_per_slab", func(s *procfs.Slab) float64 { return float64(s.PagesPerSlab) }},
		{"memdoctor_slabinfo_size_bytes", func(s *procfs.Slab) float64 { return float64(s.NumSlabs*s.PagesPerSlab) * ps }},
	} {
		for i := range slabs {
			snap.AddMetric(sample.Metric{Name: series.name, Labels: ls[i], Value: series.value(&slabs[i])})
		}
	}
	for _, i := range largestSlabs(slabs, reclaimScan) {
		s := &slabs[i]
		if strings.ContainsAny(s.Name, "/") {
			continue
		}
		v := readTrim(c, "sys/kernel/slab/"+s.Name+"/reclaim_account")
		if v == "" {
			continue
		}
		r := 0.0
		if v == "1" {
			r = 1
		}
		c.add("memdoctor_slabinfo_reclaimable", r, "slab", s.Name)
	}
	return nil
}

// largestSlabs is the indices of the n largest caches, largest first (of
// equal sizes, the first listed): kept as they come, where sorting a
// thousand caches' records to take 25 was most of this collector's own
// time.
func largestSlabs(slabs []procfs.Slab, n int) []int {
	size := func(i int) int64 { return slabs[i].NumSlabs * slabs[i].PagesPerSlab }
	top := make([]int, 0, n+1)
	for i := range slabs {
		b := size(i)
		if len(top) == n && (n == 0 || b <= size(top[n-1])) {
			continue
		}
		j := sort.Search(len(top), func(j int) bool { return size(top[j]) < b })
		top = slices.Insert(top, j, i)
		top = top[:min(len(top), n)]
	}
	return top
}
