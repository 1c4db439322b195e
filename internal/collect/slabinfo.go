package collect

import (
	"slices"
	"sort"
	"strings"

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
	for _, s := range slabs {
		l := sample.L("slab", s.Name)
		snap.AddMetric(sample.Metric{Name: "node_slabinfo_active_objects", Labels: l, Value: float64(s.ActiveObjs)})
		snap.AddMetric(sample.Metric{Name: "node_slabinfo_objects", Labels: l, Value: float64(s.NumObjs)})
		snap.AddMetric(sample.Metric{Name: "node_slabinfo_object_size_bytes", Labels: l, Value: float64(s.ObjSize)})
		snap.AddMetric(sample.Metric{Name: "node_slabinfo_objects_per_slab", Labels: l, Value: float64(s.ObjPerSlab)})
		snap.AddMetric(sample.Metric{Name: "node_slabinfo_pages_per_slab", Labels: l, Value: float64(s.PagesPerSlab)})
		snap.AddMetric(sample.Metric{Name: "memdoctor_slabinfo_size_bytes", Labels: l, Value: float64(s.NumSlabs*s.PagesPerSlab) * ps})
	}
	sort.Slice(slabs, func(i, j int) bool {
		return slabs[i].NumSlabs*slabs[i].PagesPerSlab > slabs[j].NumSlabs*slabs[j].PagesPerSlab
	})
	for i, s := range slabs {
		if i >= reclaimScan {
			break
		}
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
