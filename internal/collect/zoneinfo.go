package collect

import (
	"strconv"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

func init() { register(30, "zoneinfo", false, collectZoneinfo) }

// collectZoneinfo exports per-zone watermarks with node_exporter's names
// (node_zoneinfo_*_pages{node,zone}, protection_N) plus what node_exporter
// lacks: the boost and promo watermarks and each zone's free pages as the
// "pages free" header reports them.
func collectZoneinfo(c *ctx) error {
	zones, err := c.fs.Zoneinfo()
	if err != nil {
		return err
	}
	for _, z := range zones {
		l := []string{"node", strconv.Itoa(z.Node), "zone", z.Name}
		c.add("node_zoneinfo_min_pages", float64(z.Min), l...)
		c.add("node_zoneinfo_low_pages", float64(z.Low), l...)
		c.add("node_zoneinfo_high_pages", float64(z.High), l...)
		c.add("node_zoneinfo_spanned_pages", float64(z.Spanned), l...)
		c.add("node_zoneinfo_present_pages", float64(z.Present), l...)
		c.add("node_zoneinfo_managed_pages", float64(z.Managed), l...)
		for i, p := range z.Protection {
			c.add("node_zoneinfo_protection_"+strconv.Itoa(i), float64(p), l...)
		}
		if v, ok := z.Stats.Get("nr_free_pages"); ok {
			c.add("node_zoneinfo_nr_free_pages", float64(v), l...)
		} else {
			c.add("node_zoneinfo_nr_free_pages", float64(z.Free), l...)
		}
		c.add("memdoctor_zoneinfo_free_pages", float64(z.Free), l...)
		if z.Boost >= 0 {
			c.add("memdoctor_zoneinfo_boost_pages", float64(z.Boost), l...)
		}
		if z.Promo >= 0 {
			c.add("memdoctor_zoneinfo_promo_pages", float64(z.Promo), l...)
		}
		addNodeStats(c, z)
	}
	return nil
}

// nodeStatNames maps the per-node counters node_exporter exports to its names.
var nodeStatNames = map[string]string{
	"nr_inactive_anon":           "node_zoneinfo_nr_inactive_anon_pages",
	"nr_active_anon":             "node_zoneinfo_nr_active_anon_pages",
	"nr_inactive_file":           "node_zoneinfo_nr_inactive_file_pages",
	"nr_active_file":             "node_zoneinfo_nr_active_file_pages",
	"nr_unevictable":             "node_zoneinfo_nr_unevictable_pages",
	"nr_slab_reclaimable":        "node_zoneinfo_nr_slab_reclaimable_pages",
	"nr_slab_unreclaimable":      "node_zoneinfo_nr_slab_unreclaimable_pages",
	"nr_anon_pages":              "node_zoneinfo_nr_anon_pages",
	"nr_mapped":                  "node_zoneinfo_nr_mapped_pages",
	"nr_file_pages":              "node_zoneinfo_nr_file_pages",
	"nr_dirty":                   "node_zoneinfo_nr_dirty_pages",
	"nr_writeback":               "node_zoneinfo_nr_writeback_pages",
	"nr_shmem":                   "node_zoneinfo_nr_shmem_pages",
	"nr_kernel_misc_reclaimable": "memdoctor_zoneinfo_nr_kernel_misc_reclaimable_pages",
}

func addNodeStats(c *ctx, z procfs.Zone) {
	if len(z.NodeStats.Keys) == 0 {
		return
	}
	node := strconv.Itoa(z.Node)
	for _, k := range z.NodeStats.Keys {
		name, ok := nodeStatNames[k]
		if !ok {
			continue
		}
		c.add(name, float64(z.NodeStats.Num[k]), "node", node, "zone", z.Name)
	}
}
