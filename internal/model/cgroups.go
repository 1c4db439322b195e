package model

import "github.com/memdoctor/memdoctor/internal/cgroups/owner"

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
	// OOM splits its charge by what reclaim can take back, with the
	// distance to the OOM kill, when memory.stat was read.
	OOM *OOMMemory `json:"oom,omitempty"`
}

// CgroupOwner is what a cgroup's path says about who owns it, and the
// names the runtimes' state on the host gives (namespace, pod, container).
type CgroupOwner = owner.Owner

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
	// OOM splits its charge by what reclaim can take back, with the
	// distance to the OOM kill, when memory.stat was read; Why says in
	// one line why its working set, RSS and usage differ.
	OOM *OOMMemory `json:"oom,omitempty"`
	Why string     `json:"why,omitempty"`
	// Findings counts the findings about it (listed in the report).
	Findings int `json:"findings"`
}
