package model

import (
	"sort"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// SlackSource is one process' memory inside a cgroup's anonymous charge
// that the kernel's reclaim cannot take back but the process can: heap
// its runtime holds free (Kind runtime) or freed memory its allocator
// keeps resident (Kind allocator).
type SlackSource struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm,omitempty"`
	Kind string `json:"kind"`
	// What is the runtime (jvm, go, dotnet, …) or the allocator (glibc,
	// jemalloc, tcmalloc) that holds it.
	What  string `json:"what,omitempty"`
	Bytes int64  `json:"bytes"`
}

// HeapFree is what a runtime holds of heap beyond its live objects: the
// committed heap (at most what the process has resident: committed but
// untouched is address space) less the live heap; ok is false when the
// runtime publishes no live heap or nothing it holds.
func (r *Runtime) HeapFree() (int64, bool) {
	if r.HeapLiveBytes == nil || *r.HeapLiveBytes <= 0 {
		return 0, false
	}
	held, _, ok := r.HeapHeld()
	if !ok {
		return 0, false
	}
	return max(int64(held-*r.HeapLiveBytes), 0), true
}

// HeapHeld is the memory a runtime's heap holds: its committed heap, or
// what the process has resident when that is less (committed but never
// touched is address space, not memory), else what is resident; name
// says which of the two series it is, and ok is false when neither was
// read.
func (r *Runtime) HeapHeld() (held float64, name string, ok bool) {
	switch {
	case r.HeapCommittedBytes != nil:
		if r.ResidentBytes != nil && *r.ResidentBytes < *r.HeapCommittedBytes {
			return *r.ResidentBytes, "resident_bytes", true
		}
		return *r.HeapCommittedBytes, "heap_committed_bytes", true
	case r.ResidentBytes != nil:
		return *r.ResidentBytes, "resident_bytes", true
	}
	return 0, "", false
}

// AllocatorFree is the freed memory a process' allocator keeps resident:
// its own retained figure (what malloc_trim, or a jemalloc purge, gives
// back), else what it holds beyond what is allocated; 0 when the
// allocator's view was not read.
func (p *Process) AllocatorFree() int64 {
	if p.Malloc == nil {
		return 0
	}
	if p.Malloc.RetainedBytes > 0 {
		return p.Malloc.RetainedBytes
	}
	return max(p.Malloc.SystemBytes-p.Malloc.InUseBytes, 0)
}

// attachSlack counts, in each cgroup's OOM split, the runtime and
// allocator slack of the processes in it or below it, joined by PID
// through memdoctor_process_cgroup_info (live readings only).
func attachSlack(h *Host) {
	pidCg := map[int]string{}
	for _, m := range h.S.Select("memdoctor_process_cgroup_info") {
		if pid, err := strconv.Atoi(m.Labels.Get("pid")); err == nil && pid > 0 {
			pidCg[pid] = m.Labels.Get("cgroup")
		}
	}
	if len(pidCg) == 0 {
		return
	}
	var src []SlackSource
	for i := range h.Runtimes {
		r := &h.Runtimes[i]
		if b, ok := r.HeapFree(); ok && b > 0 && r.PID > 0 {
			src = append(src, SlackSource{PID: r.PID, Comm: r.Comm, Kind: "runtime", What: r.Runtime, Bytes: b})
		}
	}
	for i := range h.Processes {
		p := &h.Processes[i]
		if b := p.AllocatorFree(); b > 0 {
			src = append(src, SlackSource{PID: p.PID, Comm: p.Comm, Kind: "allocator", What: allocatorOf(h.S, p.PID), Bytes: b})
		}
	}
	sort.SliceStable(src, func(i, j int) bool { return src[i].Bytes > src[j].Bytes })
	for i := range h.Cgroups.Top {
		u := &h.Cgroups.Top[i]
		if u.OOM == nil {
			continue
		}
		for _, s := range src {
			cg, ok := pidCg[s.PID]
			if !ok || !within(cg, u.Cgroup) {
				continue
			}
			u.OOM.AddSlack(s)
		}
	}
}

// attachCgroupLimits joins each runtime's process to its memory cgroup
// and the lowest limit of the cgroup and its ancestors: a runtime that
// sizes its heap from the memory it is given (.NET caps its heap at 75 %
// of a container's limit) is told what it is.
func attachCgroupLimits(h *Host) {
	for _, m := range h.S.Select("memdoctor_process_cgroup_info") {
		pid, err := strconv.Atoi(m.Labels.Get("pid"))
		if err != nil || pid <= 0 {
			continue
		}
		cg := m.Labels.Get("cgroup")
		for i := range h.Runtimes {
			r := &h.Runtimes[i]
			if r.PID != pid || cg == "" {
				continue
			}
			r.Cgroup = cg
			for _, u := range h.Cgroups.Top {
				if u.LimitBytes != nil && within(cg, u.Cgroup) && (r.CgroupLimitBytes == nil || *u.LimitBytes < *r.CgroupLimitBytes) {
					v := *u.LimitBytes
					r.CgroupLimitBytes = &v
				}
			}
		}
	}
}

// within says whether cgroup cg is p or below it.
func within(cg, p string) bool {
	return cg == p || p == "/" || strings.HasPrefix(cg, strings.TrimSuffix(p, "/")+"/")
}

// AddSlack counts one process' slack in the split.
func (m *OOMMemory) AddSlack(s SlackSource) {
	if s.Kind == "runtime" {
		m.RuntimeSlackBytes += s.Bytes
	} else {
		m.AllocatorSlackBytes += s.Bytes
	}
	m.SlackFrom = append(m.SlackFrom, s)
}

// allocatorOf names a process' allocator from memdoctor_process_allocator_info.
func allocatorOf(s *sample.Snapshot, pid int) string {
	if s == nil {
		return ""
	}
	for _, m := range s.Select("memdoctor_process_allocator_info", "pid", strconv.Itoa(pid)) {
		if a := m.Labels.Get("allocator"); a != "" {
			return a
		}
	}
	return ""
}
