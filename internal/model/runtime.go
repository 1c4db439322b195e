package model

import "strings"

// Runtime is one runtime target's garbage-collector state.
type Runtime struct {
	Target  string `json:"target"`
	Runtime string `json:"runtime"`
	Version string `json:"version,omitempty"`
	// Source is scrape, hsperfdata or maps (detected only: no GC data).
	Source string `json:"source,omitempty"`
	PID    int    `json:"pid,omitempty"`
	Comm   string `json:"comm,omitempty"`
	// Also is the other target the same process was read through (its
	// scrape URL, or pid/N): one process, one runtime, from the richer
	// source.
	Also string `json:"also,omitempty"`

	GCSeconds        *float64           `json:"gc_seconds_total,omitempty"`
	YoungCollections *float64           `json:"young_collections_total,omitempty"`
	OldCollections   *float64           `json:"old_collections_total,omitempty"`
	FullCollections  *float64           `json:"full_collections_total,omitempty"`
	Induced          map[string]float64 `json:"induced_total,omitempty"`
	// InducedCallers counts induced collections by the method named as
	// the caller of GC.Collect() (.NET through its diagnostics port, over
	// check's GC interval): the first frame of the trigger's stack past
	// the GC's own and the runtime's plumbing. Collections whose caller
	// could not be named are in none.
	InducedCallers map[string]float64 `json:"induced_callers,omitempty"`
	// CollectedYoung and CollectedOld are objects freed per generation
	// (CPython).
	CollectedYoung *float64 `json:"collected_young_objects_total,omitempty"`
	CollectedOld   *float64 `json:"collected_old_objects_total,omitempty"`
	// PromotedBytes and AllocatedBytes: promoted to the old generation,
	// allocated in the young one (JVM via Micrometer).
	PromotedBytes  *float64 `json:"promoted_bytes_total,omitempty"`
	AllocatedBytes *float64 `json:"allocated_bytes_total,omitempty"`
	LastCause      string   `json:"last_cause,omitempty"`
	// LargeAllocatedBytes is what was allocated on the large-object heap,
	// as allocation ticks sample it; LargeTriggeredOld the old (gen2)
	// collections triggered by large-object allocation (.NET through its
	// diagnostics port).
	LargeAllocatedBytes *float64 `json:"large_allocated_bytes_total,omitempty"`
	LargeTriggeredOld   *float64 `json:"large_triggered_old_collections_total,omitempty"`

	HeapLiveBytes      *float64 `json:"heap_live_bytes,omitempty"`
	HeapCommittedBytes *float64 `json:"heap_committed_bytes,omitempty"`
	HeapLimitBytes     *float64 `json:"heap_limit_bytes,omitempty"`
	ResidentBytes      *float64 `json:"resident_bytes,omitempty"`
	LargeObjectBytes   *float64 `json:"large_object_bytes,omitempty"`
	// GCPendingBytes is the memory allocated since the last major
	// collection and not freed since; GCPendingLimitBytes the amount that
	// starts the next major collection (Ruby's oldmalloc figures).
	GCPendingBytes      *float64 `json:"gc_pending_bytes,omitempty"`
	GCPendingLimitBytes *float64 `json:"gc_pending_limit_bytes,omitempty"`
	// GCSettings are the collector's settings in force, where read (.NET:
	// gc server or workstation, concurrent, heaps, latency_mode,
	// heap_hard_limit_percent, gen0size, dynamic_adaptation, and from:
	// where they were read); the heap hard limit is HeapLimitBytes.
	GCSettings map[string]string `json:"gc_settings,omitempty"`
	// Process is what the runtime says of its process (.NET 5+
	// ProcessInfo): os, arch, runtime_cookie, command_line (its secrets
	// masked).
	Process map[string]string `json:"process,omitempty"`
	// Cgroup is the memory cgroup of the runtime's process, when check
	// joined the process to it (memdoctor_process_cgroup_info);
	// CgroupLimitBytes the lowest memory limit (memory.max or memory.high)
	// of that cgroup and its ancestors, nil when none is set.
	Cgroup           string `json:"cgroup,omitempty"`
	CgroupLimitBytes *int64 `json:"cgroup_limit_bytes,omitempty"`
	// UptimeSeconds is the time since the process started, when known.
	UptimeSeconds float64 `json:"uptime_seconds,omitempty"`

	// Recent are the rates over the last interval or window (nil for a
	// single reading).
	Recent *GCRates `json:"recent,omitempty"`
	// Lifetime are the rates since the process started (nil when its start
	// is unknown).
	Lifetime *GCRates `json:"lifetime,omitempty"`
}

// GCRates are a runtime's GC counters over a time span.
type GCRates struct {
	Seconds float64 `json:"seconds"`
	// GCTimeShare is GC time over wall time, 0..1 (nil when the runtime
	// publishes no GC time).
	GCTimeShare *float64 `json:"gc_time_share,omitempty"`
	GCSeconds   float64  `json:"gc_seconds"`
	Young       float64  `json:"young_collections"`
	Old         float64  `json:"old_collections"`
	Full        float64  `json:"full_collections"`
	// CollectedYoung and CollectedOld are objects freed per generation.
	CollectedYoung float64 `json:"collected_young_objects,omitempty"`
	CollectedOld   float64 `json:"collected_old_objects,omitempty"`
	// PromotedBytes and AllocatedBytes over the span.
	PromotedBytes  float64 `json:"promoted_bytes,omitempty"`
	AllocatedBytes float64 `json:"allocated_bytes,omitempty"`
	// Induced collections by cause.
	Induced map[string]float64 `json:"induced,omitempty"`
	// LargeAllocatedBytes and LargeTriggeredOld over the span.
	LargeAllocatedBytes float64 `json:"large_allocated_bytes,omitempty"`
	LargeTriggeredOld   float64 `json:"large_triggered_old_collections,omitempty"`
	// PendingMaxBytes is the largest GC-pending figure seen over the span
	// (it falls to zero at each major collection, so one reading may land
	// just after one).
	PendingMaxBytes *float64 `json:"pending_max_bytes,omitempty"`
	// LargeObjectGrowthBytes is the change of the large-object heap.
	LargeObjectGrowthBytes *float64 `json:"large_object_growth_bytes,omitempty"`
	// Sustained is, for a window, the share of its parts whose GC time share
	// was above the threshold of gc_time_high (nil otherwise).
	PartsAboveGCThreshold *float64 `json:"parts_above_gc_threshold,omitempty"`
}

// InducedTotal sums the induced collections of all causes.
func (g *GCRates) InducedTotal() float64 {
	var s float64
	for _, v := range g.Induced {
		s += v
	}
	return s
}

// Per returns n per second over the span.
func (g *GCRates) Per(n float64) float64 {
	if g.Seconds <= 0 {
		return 0
	}
	return n / g.Seconds
}

// HasGC says whether the runtime published any GC counter.
func (r *Runtime) HasGC() bool {
	return r.GCSeconds != nil || r.CollectedOld != nil || r.YoungCollections != nil || r.OldCollections != nil || r.FullCollections != nil || r.Induced != nil
}

// ServerGC says whether the runtime runs .NET's Server GC, and whether
// that is known.
func (r *Runtime) ServerGC() (on, known bool) {
	v, ok := r.GCSettings["gc"]
	return v == "server", ok
}

// URL is the scrape URL the runtime was read or is also served at.
func (r *Runtime) URL() string {
	for _, t := range []string{r.Target, r.Also} {
		if strings.Contains(t, "://") {
			return t
		}
	}
	return ""
}
