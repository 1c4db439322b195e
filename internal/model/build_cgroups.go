package model

import (
	"slices"
	"sort"

	"github.com/memdoctor/memdoctor/internal/sample"
)

func optInt(s *sample.Snapshot, name string, match ...string) *int64 {
	v, ok := s.Get(name, match...)
	if !ok {
		return nil
	}
	x := int64(v)
	return &x
}

func cgroups(s *sample.Snapshot) Cgroups {
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
				PodUID: l.Get("pod_uid"), QoS: l.Get("qos"), Unit: l.Get("unit"),
				Namespace: l.Get("namespace"), Pod: l.Get("pod"), Container: l.Get("container")}
		}
		if m, ok := OOMMemoryFrom(s, p); ok {
			u.OOM = &m
		}
		c.Top = append(c.Top, u)
	}
	sort.SliceStable(c.Top, func(i, j int) bool { return c.Top[i].UsageBytes > c.Top[j].UsageBytes })
	return c
}

// slabTop is how many caches the report lists.
const slabTop = 15

func slab(s *sample.Snapshot) SlabReport {
	r := SlabReport{ReclaimableBytes: mi(s, "SReclaimable"), UnreclaimableBytes: mi(s, "SUnreclaim"), Top: []SlabCache{}}
	if t := mi(s, "MemTotal"); t > 0 {
		r.UnreclaimablePercent = 100 * float64(r.UnreclaimableBytes) / float64(t)
	}
	if t := r.ReclaimableBytes + r.UnreclaimableBytes; t > 0 {
		r.UnreclaimableShare = 100 * float64(r.UnreclaimableBytes) / float64(t)
	}
	// The largest slabTop caches, in order (of equal sizes, the first
	// read first): kept as they come, for a host has a thousand caches
	// and sorting them all to keep fifteen was most of this function.
	top := make([]SlabCache, 0, slabTop+1)
	// Each cache's other series, by cache: asking the snapshot for each
	// cache's series searched all caches' (a few hundred) each time.
	active, size := bySlab(s, "node_slabinfo_active_objects"), bySlab(s, "node_slabinfo_object_size_bytes")
	total, reclaim := bySlab(s, "memdoctor_slabinfo_size_bytes"), bySlab(s, "memdoctor_slabinfo_reclaimable")
	for m := range s.Each("node_slabinfo_objects") {
		r.CachesVisible = true
		name := m.Labels.Get("slab")
		c := SlabCache{Name: name, Objects: int64(m.Value),
			ActiveObjects:   int64(active[name]),
			ObjectSizeBytes: int64(size[name])}
		if b, ok := total[name]; ok {
			c.Bytes = int64(b)
		} else {
			c.Bytes = c.Objects * c.ObjectSizeBytes // node_exporter data: objects only
		}
		if len(top) == slabTop && c.Bytes <= top[slabTop-1].Bytes {
			continue
		}
		if v, ok := reclaim[name]; ok {
			b := v == 1
			c.Reclaimable = &b
		}
		top = insertBySize(top, c, slabTop)
	}
	r.Top = append(r.Top, top...)
	return r
}

// insertBySize puts c into top (largest first, at most n) after the
// caches of its size already there.
func insertBySize(top []SlabCache, c SlabCache, n int) []SlabCache {
	i := sort.Search(len(top), func(i int) bool { return top[i].Bytes < c.Bytes })
	top = slices.Insert(top, i, c)
	return top[:min(len(top), n)]
}

// bySlab maps each cache's name to its value of the series name (the
// first, as Snapshot.Get).
func bySlab(s *sample.Snapshot, name string) map[string]float64 {
	out := make(map[string]float64, s.Count(name))
	for m := range s.Each(name) {
		k := m.Labels.Get("slab")
		if _, seen := out[k]; !seen {
			out[k] = m.Value
		}
	}
	return out
}

// CgroupDetailOf gathers what a scrape holds of one cgroup; ok is false
// when it holds nothing of it.
func CgroupDetailOf(s *sample.Snapshot, p string) (d CgroupDetail, ok bool) {
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
			PodUID: l.Get("pod_uid"), QoS: l.Get("qos"), Unit: l.Get("unit"),
			Namespace: l.Get("namespace"), Pod: l.Get("pod"), Container: l.Get("container")}
	}
	if m, ok := OOMMemoryFrom(s, p); ok {
		if i := s.Select("memdoctor_cgroup_info"); len(i) > 0 && i[0].Labels.Get("memory") == "v1" {
			m.DyingNotMeasured = "cgroup v1: usage mixes the processes' own charge with what removed cgroups left, and dying cgroups are not counted per cgroup"
		}
		d.OOM, d.Why = &m, m.Why()
	}
	return d, true
}

// FocusCgroup keeps the report's findings about one cgroup (their subject
// is the cgroup) and adds its detail; it returns how many other findings
// it left out.
func FocusCgroup(r *Report, s *sample.Snapshot, p string) (hidden int) {
	var keep []Finding
	for _, f := range r.Findings {
		if f.Subject == "cgroup "+p {
			keep = append(keep, f)
		}
	}
	hidden = len(r.Findings) - len(keep)
	r.Findings = append([]Finding{}, keep...)
	if d, ok := CgroupDetailOf(s, p); ok {
		if r.Host != nil {
			for _, u := range r.Cgroups.Top {
				if u.Cgroup == p && u.OOM != nil && d.OOM != nil {
					d.OOM.GrowthBytesPerSecond, d.OOM.ETASeconds = u.OOM.GrowthBytesPerSecond, u.OOM.ETASeconds
					d.OOM.RuntimeSlackBytes, d.OOM.AllocatorSlackBytes, d.OOM.SlackFrom = u.OOM.RuntimeSlackBytes, u.OOM.AllocatorSlackBytes, u.OOM.SlackFrom
				}
			}
		}
		d.Findings = len(keep)
		r.Cgroup = &d
	}
	return hidden
}

// runtimeName is the name the container runtimes' state on the host gave
// a cgroup's owner (namespace/pod/container, namespace/pod, a container's
// name); "" when only its path named it (ids, which read as numbers, stay
// out of summaries).
func runtimeName(s *sample.Snapshot, p string) string {
	for _, m := range s.Select("memdoctor_cgroup_owner_info", "cgroup", p) {
		if l := m.Labels; l.Get("pod") != "" || l.Get("container") != "" {
			return l.Get("name")
		}
	}
	return ""
}

// NamedSummary starts a cgroup finding's summary with its owner's runtime
// name, when there is one.
func NamedSummary(s *sample.Snapshot, p, summary string) string {
	if n := runtimeName(s, p); n != "" {
		return n + ": " + summary
	}
	return summary
}
