package model

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// OOMMemory is one memory cgroup's charge split by what its own reclaim can
// do with it when the charge reaches the limit. The OOM killer acts when
// reclaim cannot bring the charge back under the limit, so what matters is
// the part reclaim cannot take back (without swap): anonymous memory,
// shmem (tmpfs, SysV, memfd: swap-backed, so as anonymous) and the kernel's
// unreclaimable allocations. Page cache is taken back, dirty and writeback
// pages once written.
//
// The keys are memory.stat's, in v2 names (v1's are translated when read):
// anon excludes shmem; active_file and inactive_file exclude shmem too
// (shmem pages sit on the anonymous LRU lists).
type OOMMemory struct {
	UsageBytes int64 `json:"usage_bytes"`
	AnonBytes  int64 `json:"anon_bytes"`
	ShmemBytes int64 `json:"shmem_bytes"`
	// KernelBytes is the kernel's unreclaimable part: v2's kernel minus
	// slab_reclaimable, or the sum of slab_unreclaimable, kernel_stack,
	// pagetables and sock on kernels without the kernel key. KernelEstimated
	// says it was instead the usage left after anon and file (v1, where
	// memory.stat has no kernel keys but usage counts kmem).
	KernelBytes     int64 `json:"kernel_unreclaimable_bytes"`
	KernelEstimated bool  `json:"kernel_estimated,omitempty"`
	// ActiveFileBytes and InactiveFileBytes are the page cache on the file
	// LRU lists; DirtyBytes counts file_dirty and file_writeback among them.
	ActiveFileBytes   int64 `json:"active_file_bytes"`
	InactiveFileBytes int64 `json:"inactive_file_bytes"`
	DirtyBytes        int64 `json:"dirty_bytes"`
	// SlabReclaimableBytes is kernel memory reclaim can shrink (dentries,
	// inodes).
	SlabReclaimableBytes int64 `json:"slab_reclaimable_bytes"`
	// UnreclaimableBytes is anon + shmem + kernel: what the cgroup's reclaim
	// cannot take back without swap.
	UnreclaimableBytes int64 `json:"unreclaimable_bytes"`
	// WorkingSetBytes is usage minus inactive file: what the kubelet's
	// eviction and kubectl top show.
	WorkingSetBytes int64 `json:"working_set_bytes"`
	// LimitBytes is the limit the OOM killer acts at (memory.max, v1
	// memory.limit_in_bytes; not memory.high, over which the kernel
	// throttles and does not kill), nil when none is set; DistanceBytes is
	// LimitBytes minus UnreclaimableBytes, how much more the cgroup can
	// hold before reclaim has nothing left to take.
	LimitBytes    *int64 `json:"limit_bytes,omitempty"`
	DistanceBytes *int64 `json:"oom_distance_bytes,omitempty"`
	// SwapRoomBytes is how much of its anonymous memory and shmem reclaim
	// may still move to swap (the cgroup's swap limit less its swap, at
	// most the host's free swap), when the cgroup may swap: so much of
	// the unreclaimable part is not, and DistanceBytes counts it.
	SwapRoomBytes int64 `json:"swap_room_bytes,omitempty"`
	// GrowthBytesPerSecond is the unreclaimable part's growth over the
	// time range judged, when it rises significantly; ETASeconds is the
	// distance at that growth, when a limit is set.
	GrowthBytesPerSecond *float64 `json:"unreclaimable_growth_bytes_per_second,omitempty"`
	ETASeconds           *float64 `json:"oom_eta_seconds,omitempty"`
	// RuntimeSlackBytes is heap the runtimes of the cgroup's processes
	// (and of those in cgroups below it) hold free, AllocatorSlackBytes
	// freed memory their allocators keep resident, where memdoctor read
	// them; SlackFrom are the processes, the largest first. Both are
	// inside anon: the kernel cannot reclaim them, the processes can
	// (a collection, a trim) without a restart.
	RuntimeSlackBytes   int64         `json:"runtime_slack_bytes,omitempty"`
	AllocatorSlackBytes int64         `json:"allocator_slack_bytes,omitempty"`
	SlackFrom           []SlackSource `json:"slack_from,omitempty"`
	// DyingBytes is, on cgroup v2 for a cgroup with dying descendants and
	// no processes of its own, the charge its live children do not hold:
	// page cache and kernel memory its removed descendants left charged
	// (or reparented to it); DyingDescendants is how many there are.
	// DyingNotMeasured says why it was not measured (v1).
	DyingBytes       *int64 `json:"dying_bytes,omitempty"`
	DyingDescendants *int64 `json:"dying_descendants,omitempty"`
	DyingNotMeasured string `json:"dying_not_measured,omitempty"`
}

// SetSwapRoom counts room more bytes that reclaim may swap out: the
// distance grows by as much (at most the anonymous memory and shmem
// there is to swap).
func (m *OOMMemory) SetSwapRoom(room int64) {
	room = min(max(room, 0), m.AnonBytes+m.ShmemBytes)
	if m.DistanceBytes != nil {
		d := *m.DistanceBytes - m.SwapRoomBytes + room
		m.DistanceBytes = &d
	}
	m.SwapRoomBytes = room
}

// SetGrowth sets the unreclaimable part's growth and, with a limit not
// yet reached, the time until the distance is used up.
func (m *OOMMemory) SetGrowth(perSecond float64) {
	if perSecond <= 0 {
		return
	}
	m.GrowthBytesPerSecond = &perSecond
	if m.DistanceBytes != nil {
		eta := max(float64(*m.DistanceBytes), 0) / perSecond
		m.ETASeconds = &eta
	}
}

// OOMMemoryOf splits a charge from memory.stat (v2 key names), the usage
// and the limit (nil for none).
func OOMMemoryOf(stat map[string]int64, usage int64, limit *int64) OOMMemory {
	m := OOMMemory{UsageBytes: usage, AnonBytes: stat["anon"], ShmemBytes: stat["shmem"],
		ActiveFileBytes: stat["active_file"], InactiveFileBytes: stat["inactive_file"],
		DirtyBytes: stat["file_dirty"] + stat["file_writeback"], SlabReclaimableBytes: stat["slab_reclaimable"]}
	if k, ok := stat["kernel"]; ok {
		m.KernelBytes = max(k-stat["slab_reclaimable"], 0)
	} else {
		var seen bool
		for _, key := range []string{"slab_unreclaimable", "kernel_stack", "pagetables", "sock"} {
			v, ok := stat[key]
			m.KernelBytes += v
			seen = seen || ok
		}
		if !seen {
			// v1: usage counts kernel memory (kmem) that memory.stat
			// does not break down; what is left after anon and file.
			m.KernelBytes = max(usage-stat["anon"]-stat["file"], 0)
			m.KernelEstimated = true
		}
	}
	m.UnreclaimableBytes = m.AnonBytes + m.ShmemBytes + m.KernelBytes
	m.WorkingSetBytes = max(usage-m.InactiveFileBytes, 0)
	if limit != nil {
		l, d := *limit, *limit-m.UnreclaimableBytes
		m.LimitBytes, m.DistanceBytes = &l, &d
	}
	return m
}

// OOMMemoryFrom reads one cgroup's split from a scrape of memdoctor's
// series; ok is false when the scrape holds no memory.stat of it.
func OOMMemoryFrom(s *sample.Snapshot, cgroup string) (m OOMMemory, ok bool) {
	u, ok := s.Get("memdoctor_cgroup_memory_usage_bytes", "cgroup", cgroup)
	if !ok {
		return m, false
	}
	stat := map[string]int64{}
	for _, k := range []string{"anon", "file", "shmem"} {
		if v, ok := s.Get("memdoctor_cgroup_memory_"+k+"_bytes", "cgroup", cgroup); ok {
			stat[k] = int64(v)
		}
	}
	if _, ok := stat["anon"]; !ok {
		return m, false
	}
	for _, x := range s.Select("memdoctor_cgroup_memory_stat", "cgroup", cgroup) {
		stat[x.Labels.Get("stat")] = int64(x.Value)
	}
	// memory.max only: over memory.high the kernel throttles the
	// cgroup's tasks and reclaims, it does not kill.
	limit := optInt(s, "memdoctor_cgroup_memory_limit_bytes", "cgroup", cgroup)
	m = OOMMemoryOf(stat, int64(u), limit)
	m.SetSwapRoom(swapRoom(s, cgroup))
	m.DyingBytes = optInt(s, "memdoctor_cgroup_memory_dying_charge_bytes", "cgroup", cgroup)
	if m.DyingBytes != nil {
		m.DyingDescendants = optInt(s, "memdoctor_cgroup_dying_descendants", "cgroup", cgroup)
	}
	return m, true
}

// swapRoom is how much more cgroup may swap: its swap limit (v2
// memory.swap.max, v1 memsw less the memory limit; unlimited without the
// series) less its swap, at most the host's free swap; 0 when the host has
// no swap or its free swap is not known.
func swapRoom(s *sample.Snapshot, cgroup string) int64 {
	free, ok := s.Get("node_memory_SwapFree_bytes")
	if !ok || free <= 0 {
		return 0
	}
	room := int64(free)
	if l := optInt(s, "memdoctor_cgroup_memory_swap_limit_bytes", "cgroup", cgroup); l != nil {
		used := int64(s.Value("memdoctor_cgroup_memory_swap_bytes", "cgroup", cgroup))
		room = min(room, *l-used)
	}
	return max(room, 0)
}

// Why says in one line why the working set (kubectl top, the kubelet's
// eviction), the processes' RSS and the cgroup's usage differ, and what
// the OOM killer goes by.
func (m OOMMemory) Why() string {
	cache := m.ActiveFileBytes + m.InactiveFileBytes
	s := fmt.Sprintf("usage %s counts %s of page cache and %s of kernel memory; the working set (kubectl top) %s leaves out only the %s inactive page cache, so it still counts %s of active page cache that reclaim can take back; RSS counts the processes' mapped pages only, never shmem that no process maps nor kernel memory; the OOM killer goes by the %s reclaim cannot take back (anon %s, shmem %s, kernel %s)",
		format.Bytes(m.UsageBytes), format.Bytes(cache), format.Bytes(m.KernelBytes+m.SlabReclaimableBytes),
		format.Bytes(m.WorkingSetBytes), format.Bytes(m.InactiveFileBytes), format.Bytes(m.ActiveFileBytes),
		format.Bytes(m.UnreclaimableBytes), format.Bytes(m.AnonBytes), format.Bytes(m.ShmemBytes), format.Bytes(m.KernelBytes))
	if m.KernelEstimated {
		s += " (kernel estimated: usage less anon and file)"
	}
	if m.SwapRoomBytes > 0 {
		s += fmt.Sprintf(", less the %s it may still swap out", format.Bytes(m.SwapRoomBytes))
	}
	return s
}
