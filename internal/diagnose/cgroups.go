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
	// WorkingSetBytes is usage minus inactive file, when memory.stat was read.
	WorkingSetBytes *int64 `json:"working_set_bytes,omitempty"`
	// LimitBytes is the lower of memory.max and memory.high, when set.
	LimitBytes *int64 `json:"limit_bytes,omitempty"`
	// OOMKills and LimitHits are the oom_kill and max events (v1: the
	// cgroup's own oom_kill and failcnt), when read.
	OOMKills  *int64 `json:"oom_kills,omitempty"`
	LimitHits *int64 `json:"limit_hits,omitempty"`
	// PressureSomeAvg10 is the share of the last 10 s its tasks stalled on
	// memory, in percent (v2 memory.pressure).
	PressureSomeAvg10 *float64 `json:"pressure_some_avg10_percent,omitempty"`
	// Owner is who it belongs to (unit, container, pod), from its path;
	// nil for a plain directory.
	Owner *CgroupOwner `json:"owner,omitempty"`
}

// CgroupOwner is what a cgroup's path says about who owns it.
type CgroupOwner struct {
	Kind        string `json:"kind,omitempty"`
	Name        string `json:"name,omitempty"`
	Runtime     string `json:"runtime,omitempty"`
	ContainerID string `json:"container_id,omitempty"`
	PodUID      string `json:"pod_uid,omitempty"`
	QoS         string `json:"qos,omitempty"`
	Unit        string `json:"unit,omitempty"`
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
		u := CgroupUse{Cgroup: p, UsageBytes: int64(m.Value),
			AnonBytes:       int64(s.Value("memdoctor_cgroup_memory_anon_bytes", "cgroup", p)),
			FileBytes:       int64(s.Value("memdoctor_cgroup_memory_file_bytes", "cgroup", p)),
			ShmemBytes:      int64(s.Value("memdoctor_cgroup_memory_shmem_bytes", "cgroup", p)),
			WorkingSetBytes: optInt(s, "memdoctor_cgroup_memory_working_set_bytes", "cgroup", p),
			LimitBytes:      optInt(s, "memdoctor_cgroup_memory_limit_bytes", "cgroup", p),
			OOMKills:        optInt(s, "memdoctor_cgroup_memory_events_total", "cgroup", p, "event", "oom_kill"),
			LimitHits:       optInt(s, "memdoctor_cgroup_memory_events_total", "cgroup", p, "event", "max"),
		}
		if h := optInt(s, "memdoctor_cgroup_memory_high_bytes", "cgroup", p); h != nil && (u.LimitBytes == nil || *h < *u.LimitBytes) {
			u.LimitBytes = h
		}
		if v, ok := s.Get("memdoctor_cgroup_memory_pressure_avg10_percent", "cgroup", p, "kind", "some"); ok {
			u.PressureSomeAvg10 = &v
		}
		if o := s.Select("memdoctor_cgroup_owner_info", "cgroup", p); len(o) > 0 && o[0].Labels.Get("kind") != "" {
			l := o[0].Labels
			u.Owner = &CgroupOwner{Kind: l.Get("kind"), Name: l.Get("name"), Runtime: l.Get("runtime"), ContainerID: l.Get("container_id"),
				PodUID: l.Get("pod_uid"), QoS: l.Get("qos"), Unit: l.Get("unit")}
		}
		c.Top = append(c.Top, u)
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

// CgroupDetail is everything read of one memory cgroup (check --cgroup):
// its accounting, limits, events and pressure, and the findings about it.
type CgroupDetail struct {
	Cgroup string       `json:"cgroup"`
	Owner  *CgroupOwner `json:"owner,omitempty"`
	// UsageBytes and WorkingSetBytes as in CgroupUse.
	UsageBytes      int64  `json:"usage_bytes"`
	WorkingSetBytes *int64 `json:"working_set_bytes,omitempty"`
	// PeakBytes is memory.peak (v1 max_usage_in_bytes), SwapBytes the
	// swap charged (v2 memory.swap.current, v1 memsw minus usage).
	PeakBytes *int64 `json:"peak_bytes,omitempty"`
	SwapBytes *int64 `json:"swap_bytes,omitempty"`
	// Limits by name (max, high, low, min, swap_max), bytes; an unset
	// limit is absent.
	Limits map[string]int64 `json:"limits"`
	// Stat holds memory.stat's keys memdoctor records (anon, file, shmem,
	// active/inactive, kernel, slab, workingset_*), in v2 names.
	Stat map[string]int64 `json:"stat"`
	// Events are memory.events (v1: failcnt as max, oom_kill);
	// EventsLocal v2's memory.events.local.
	Events      map[string]int64 `json:"events"`
	EventsLocal map[string]int64 `json:"events_local,omitempty"`
	// Pressure is memory.pressure by kind (some, full): avg10, avg60 in
	// percent, total_seconds.
	Pressure map[string]map[string]float64 `json:"pressure,omitempty"`
	// Findings counts the findings about it (listed in the report).
	Findings int `json:"findings"`
}

// CgroupDetailOf gathers what a scrape holds of one cgroup; ok is false
// when it holds nothing of it.
func CgroupDetailOf(s *sample.Scrape, p string) (d CgroupDetail, ok bool) {
	u, ok := s.Get("memdoctor_cgroup_memory_usage_bytes", "cgroup", p)
	if !ok {
		return d, false
	}
	d = CgroupDetail{Cgroup: p, UsageBytes: int64(u), WorkingSetBytes: optInt(s, "memdoctor_cgroup_memory_working_set_bytes", "cgroup", p),
		PeakBytes: optInt(s, "memdoctor_cgroup_memory_peak_bytes", "cgroup", p), SwapBytes: optInt(s, "memdoctor_cgroup_memory_swap_bytes", "cgroup", p),
		Limits: map[string]int64{}, Stat: map[string]int64{}, Events: map[string]int64{}}
	for name, series := range map[string]string{"max": "limit", "high": "high", "low": "low", "min": "min", "swap_max": "swap_limit"} {
		if v, ok := s.Get("memdoctor_cgroup_memory_"+series+"_bytes", "cgroup", p); ok {
			d.Limits[name] = int64(v)
		}
	}
	for _, k := range []string{"anon", "file", "shmem"} {
		if v, ok := s.Get("memdoctor_cgroup_memory_"+k+"_bytes", "cgroup", p); ok {
			d.Stat[k] = int64(v)
		}
	}
	for _, m := range s.Select("memdoctor_cgroup_memory_stat", "cgroup", p) {
		d.Stat[m.Labels.Get("stat")] = int64(m.Value)
	}
	for _, m := range s.Select("memdoctor_cgroup_memory_events_total", "cgroup", p) {
		d.Events[m.Labels.Get("event")] = int64(m.Value)
	}
	for _, m := range s.Select("memdoctor_cgroup_memory_events_local_total", "cgroup", p) {
		if d.EventsLocal == nil {
			d.EventsLocal = map[string]int64{}
		}
		d.EventsLocal[m.Labels.Get("event")] = int64(m.Value)
	}
	for series, key := range map[string]string{"memdoctor_cgroup_memory_pressure_avg10_percent": "avg10",
		"memdoctor_cgroup_memory_pressure_avg60_percent": "avg60", "memdoctor_cgroup_memory_pressure_seconds_total": "total_seconds"} {
		for _, m := range s.Select(series, "cgroup", p) {
			if d.Pressure == nil {
				d.Pressure = map[string]map[string]float64{}
			}
			kind := m.Labels.Get("kind")
			if d.Pressure[kind] == nil {
				d.Pressure[kind] = map[string]float64{}
			}
			d.Pressure[kind][key] = m.Value
		}
	}
	if o := s.Select("memdoctor_cgroup_owner_info", "cgroup", p); len(o) > 0 && o[0].Labels.Get("kind") != "" {
		l := o[0].Labels
		d.Owner = &CgroupOwner{Kind: l.Get("kind"), Name: l.Get("name"), Runtime: l.Get("runtime"), ContainerID: l.Get("container_id"),
			PodUID: l.Get("pod_uid"), QoS: l.Get("qos"), Unit: l.Get("unit")}
	}
	return d, true
}

// FocusCgroup keeps the report's findings about one cgroup (their subject
// is the cgroup) and adds its detail; it returns how many other findings
// it left out.
func (r *Report) FocusCgroup(s *sample.Scrape, p string) (hidden int) {
	var keep []Finding
	for _, f := range r.Findings {
		if f.Subject == "cgroup "+p {
			keep = append(keep, f)
		}
	}
	hidden = len(r.Findings) - len(keep)
	r.Findings = append([]Finding{}, keep...)
	if d, ok := CgroupDetailOf(s, p); ok {
		d.Findings = len(keep)
		r.Cgroup = &d
	}
	return hidden
}
