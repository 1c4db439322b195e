package diagnose

import (
	"sort"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Cgroups summarises memory cgroups.
type Cgroups struct {
	// Mode is the cgroup layout: v1, v2, hybrid or none.
	Mode string `json:"mode"`
	// MemoryHierarchy says where the memory controller is: v1, v2 or none.
	MemoryHierarchy string `json:"memory_hierarchy"`
	MemoryTotal     *int64 `json:"memory_total"`
	MemoryLive      *int64 `json:"memory_live"`
	MemoryDying     *int64 `json:"memory_dying"`
	// V2DyingDescendants is the unified root's nr_dying_descendants (any
	// controller), when cgroup2 is mounted.
	V2DyingDescendants *int64      `json:"v2_dying_descendants,omitempty"`
	Top                []CgroupUse `json:"top"`
}

// CgroupUse is one cgroup's charged memory.
type CgroupUse struct {
	Cgroup     string `json:"cgroup"`
	UsageBytes int64  `json:"usage_bytes"`
	AnonBytes  int64  `json:"anon_bytes"`
	FileBytes  int64  `json:"file_bytes"`
	ShmemBytes int64  `json:"shmem_bytes"`
}

func optInt(s *sample.Scrape, name string, match ...string) *int64 {
	v, ok := s.Get(name, match...)
	if !ok {
		return nil
	}
	x := int64(v)
	return &x
}

func cgroups(s *sample.Scrape) Cgroups {
	c := Cgroups{Mode: "unknown", MemoryHierarchy: "unknown", Top: []CgroupUse{}}
	if i := s.Select("memdoctor_cgroup_info"); len(i) > 0 {
		c.Mode = i[0].Labels.Get("mode")
		c.MemoryHierarchy = i[0].Labels.Get("memory")
	}
	c.MemoryLive = optInt(s, "memdoctor_memcg_live_cgroups")
	c.MemoryDying = optInt(s, "memdoctor_memcg_dying_cgroups")
	c.V2DyingDescendants = optInt(s, "memdoctor_cgroup2_nr_dying_descendants")
	if c.MemoryLive == nil && c.MemoryDying == nil {
		// node_exporter data: /proc/cgroups only (dying included).
		c.MemoryTotal = optInt(s, "node_cgroups_cgroups", "subsys_name", "memory")
	}
	if c.MemoryLive != nil && c.MemoryDying != nil {
		t := *c.MemoryLive + *c.MemoryDying
		c.MemoryTotal = &t
	}
	for _, m := range s.Select("memdoctor_cgroup_memory_usage_bytes") {
		p := m.Labels.Get("cgroup")
		c.Top = append(c.Top, CgroupUse{Cgroup: p, UsageBytes: int64(m.Value),
			AnonBytes:  int64(s.Value("memdoctor_cgroup_memory_anon_bytes", "cgroup", p)),
			FileBytes:  int64(s.Value("memdoctor_cgroup_memory_file_bytes", "cgroup", p)),
			ShmemBytes: int64(s.Value("memdoctor_cgroup_memory_shmem_bytes", "cgroup", p)),
		})
	}
	sort.SliceStable(c.Top, func(i, j int) bool { return c.Top[i].UsageBytes > c.Top[j].UsageBytes })
	return c
}

// SlabReport summarises slab memory.
type SlabReport struct {
	ReclaimableBytes   int64 `json:"reclaimable_bytes"`
	UnreclaimableBytes int64 `json:"unreclaimable_bytes"`
	// UnreclaimablePercent is SUnreclaim as a share of MemTotal.
	UnreclaimablePercent float64 `json:"unreclaimable_percent_of_total"`
	// UnreclaimableShare is SUnreclaim as a share of all slab.
	UnreclaimableShare float64     `json:"unreclaimable_share_percent"`
	Top                []SlabCache `json:"top"`
	// CachesVisible is false when slabinfo could not be read.
	CachesVisible bool `json:"caches_visible"`
}

// SlabCache is one slab cache.
type SlabCache struct {
	Name            string `json:"name"`
	Bytes           int64  `json:"bytes"`
	Objects         int64  `json:"objects"`
	ActiveObjects   int64  `json:"active_objects"`
	ObjectSizeBytes int64  `json:"object_size_bytes"`
	// Reclaimable is the cache's SLAB_RECLAIM_ACCOUNT flag, when known.
	Reclaimable *bool `json:"reclaimable,omitempty"`
}

// slabTop is how many caches the report lists.
const slabTop = 15

func slab(s *sample.Scrape) SlabReport {
	r := SlabReport{ReclaimableBytes: mi(s, "SReclaimable"), UnreclaimableBytes: mi(s, "SUnreclaim"), Top: []SlabCache{}}
	if t := mi(s, "MemTotal"); t > 0 {
		r.UnreclaimablePercent = 100 * float64(r.UnreclaimableBytes) / float64(t)
	}
	if t := r.ReclaimableBytes + r.UnreclaimableBytes; t > 0 {
		r.UnreclaimableShare = 100 * float64(r.UnreclaimableBytes) / float64(t)
	}
	var all []SlabCache
	for _, m := range s.Select("node_slabinfo_objects") {
		name := m.Labels.Get("slab")
		c := SlabCache{Name: name, Objects: int64(m.Value),
			ActiveObjects:   int64(s.Value("node_slabinfo_active_objects", "slab", name)),
			ObjectSizeBytes: int64(s.Value("node_slabinfo_object_size_bytes", "slab", name))}
		if b, ok := s.Get("memdoctor_slabinfo_size_bytes", "slab", name); ok {
			c.Bytes = int64(b)
		} else {
			c.Bytes = c.Objects * c.ObjectSizeBytes // node_exporter data: objects only
		}
		if v, ok := s.Get("memdoctor_slabinfo_reclaimable", "slab", name); ok {
			b := v == 1
			c.Reclaimable = &b
		}
		all = append(all, c)
	}
	r.CachesVisible = len(all) > 0
	sort.SliceStable(all, func(i, j int) bool { return all[i].Bytes > all[j].Bytes })
	if len(all) > slabTop {
		all = all[:slabTop]
	}
	r.Top = append(r.Top, all...)
	return r
}
