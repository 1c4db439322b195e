package pagescan

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Hierarchy is where the memory controller is mounted.
type Hierarchy struct {
	Mount   string // absolute mount point
	Version string // "v1" or "v2"
}

// FindMemoryHierarchy reads /proc/self/mountinfo for the memory
// controller's mount: a v1 hierarchy with the memory option, else cgroup2
// when it has the memory controller.
func FindMemoryHierarchy(proc string) (Hierarchy, error) {
	m, _, err := cgroups.FindMounts(procFS(proc)) // a bad line hides only its mount
	if err != nil {
		return Hierarchy{}, err
	}
	root, v1, ok := m.Memory()
	if !ok {
		return Hierarchy{}, errors.New("no memory cgroup hierarchy is mounted")
	}
	if v1 {
		return Hierarchy{Mount: "/" + root, Version: "v1"}, nil
	}
	return Hierarchy{Mount: "/" + root, Version: "v2"}, nil
}

// procFS reads the host whose proc mount is proc ("/proc": the live host);
// a proc mount named otherwise has no host around it, and reads nothing.
func procFS(proc string) procfs.FS {
	if filepath.Base(proc) != "proc" {
		return procfs.NewFS(proc + "/nothing")
	}
	return procfs.NewFS(filepath.Dir(proc))
}

// Pin is what removed cgroups pin under one live cgroup (their nearest
// live ancestor).
type Pin struct {
	Cgroup string `json:"cgroup"` // relative to the hierarchy, "/" for its root
	Counts
}

// Report is a scan attributed to the memory cgroup hierarchy.
type Report struct {
	Hierarchy Hierarchy
	Scan      *Result
	// Live is the number of live memory cgroups (directories).
	Live int
	// Dying is the kernel's count of removed memory cgroups still
	// allocated; -1 when unknown.
	Dying int64
	// Charged is every page charged to a memory cgroup.
	Charged Counts
	// Pinned is what removed cgroups pin (v1 only: the scan beyond each
	// live cgroup's local counters); PinnedKnown says it was computed.
	Pinned      Counts
	PinnedKnown bool
	// ByAncestor lists where the pinned pages sit, most page cache first.
	ByAncestor []Pin
}

// local reads the cgroup's own (non-hierarchical) counters from a v1
// memory.stat, in pages (dir is the cgroup's absolute path).
func local(dir string, pageSize int64) (Counts, bool) {
	st, err := cgroups.ReadMemoryStat(procfs.NewFS("/"), strings.TrimPrefix(dir, "/"))
	if err != nil {
		return Counts{}, false
	}
	l := st.V1Local()
	return Counts{File: l["file"] / pageSize, Anon: l["anon"] / pageSize, Dirty: l["file_dirty"] / pageSize,
		Writeback: l["file_writeback"] / pageSize, Mapped: l["file_mapped"] / pageSize, Shmem: l["shmem"] / pageSize}, true
}

// maxDirs bounds the walk of the hierarchy (a host has thousands of
// cgroups at most; the kernel's limit on dying ones is far below this).
const maxDirs = 1 << 20

func excess(scan, own int64) int64 { return max(scan-own, 0) }

// Attribute maps the scan's inodes to the hierarchy's directories. Read it
// right after the scan: a cgroup removed in between counts as dying.
func Attribute(res *Result, h Hierarchy, proc string) *Report {
	rep := &Report{Hierarchy: h, Scan: res, Dying: -1, Charged: res.Total()}
	ps := int64(res.PageSize)
	seen := map[uint64]bool{}
	pins := map[string]*Pin{}
	_, _ = cgroups.WalkInodes(h.Mount, maxDirs, func(ino uint64, rel string) bool {
		rep.Live++
		seen[ino] = true
		if h.Version != "v1" {
			return true
		}
		sc := res.ByInode[ino]
		if sc == nil {
			return true
		}
		p := h.Mount
		if rel != "/" {
			p += rel
		}
		own, ok := local(p, ps)
		if !ok {
			return true
		}
		// The flags are shares of the pinned page cache: never more.
		f := excess(sc.File, own.File)
		pin := Counts{File: f, Anon: excess(sc.Anon, own.Anon),
			Dirty: min(excess(sc.Dirty, own.Dirty), f), Writeback: min(excess(sc.Writeback, own.Writeback), f),
			Mapped: min(excess(sc.Mapped, own.Mapped), f), Shmem: min(excess(sc.Shmem, own.Shmem), f)}
		pin.Pages = pin.File + pin.Anon
		if pin.Pages > 0 {
			pins[rel] = &Pin{Cgroup: rel, Counts: pin}
		}
		return true
	})
	// Inodes without a directory: cgroups removed after their pages were
	// read (the kernel had not yet moved them to the parent).
	var gone Counts
	for ino, c := range res.ByInode {
		if !seen[ino] {
			gone.Add(*c)
		}
	}
	if h.Version == "v1" {
		rep.PinnedKnown = true
		for _, p := range pins {
			rep.Pinned.Add(p.Counts)
			rep.ByAncestor = append(rep.ByAncestor, *p)
		}
		rep.Pinned.Add(gone)
		sort.Slice(rep.ByAncestor, func(i, j int) bool {
			a, b := rep.ByAncestor[i], rep.ByAncestor[j]
			if a.File != b.File {
				return a.File > b.File
			}
			return a.Cgroup < b.Cgroup
		})
	}
	rep.Dying = dyingCount(h, proc, rep.Live)
	return rep
}

// dyingCount: v2's cgroup.stat nr_dying_subsys_memory (6.11+), else
// nr_dying_descendants; v1's /proc/cgroups count minus the directories.
func dyingCount(h Hierarchy, proc string, live int) int64 {
	if h.Version == "v2" {
		st, err := cgroups.ReadCgroupStat(procfs.NewFS("/"), strings.TrimPrefix(h.Mount, "/"))
		if err != nil {
			return -1
		}
		if n, _, ok := st.DyingMemory(); ok {
			return n
		}
		return -1
	}
	if n, err := cgroups.DyingV1(procFS(proc), int64(live)); err == nil {
		return n
	}
	return -1
}

// TopAncestors is how many live cgroups holding pinned pages are exported.
const TopAncestors = 10

// AddTo adds the report's series to a snapshot.
func (r *Report) AddTo(s *sample.Snapshot) {
	ps := float64(r.Scan.PageSize)
	s.Add("memdoctor_pagescan_seconds", r.Scan.Duration.Seconds())
	s.Add("memdoctor_pagescan_ram_bytes", float64(r.Scan.RAMBytes))
	complete := 0.0
	if r.Scan.Complete {
		complete = 1
	}
	s.Add("memdoctor_pagescan_complete", complete)
	for _, k := range kinds(r.Charged) {
		s.Add("memdoctor_memcg_charged_bytes", float64(k.pages)*ps, "type", k.name)
	}
	if !r.PinnedKnown {
		return
	}
	for _, k := range kinds(r.Pinned) {
		if k.name == "slab" || k.name == "kernel" {
			continue // not split by the local counters
		}
		s.Add("memdoctor_memcg_dying_pinned_bytes", float64(k.pages)*ps, "type", k.name)
	}
	for i, p := range r.ByAncestor {
		if i >= TopAncestors {
			break
		}
		s.Add("memdoctor_memcg_dying_pinned_ancestor_bytes", float64(p.File)*ps, "cgroup", p.Cgroup, "type", "file")
	}
}

type kind struct {
	name  string
	pages int64
}

func kinds(c Counts) []kind {
	return []kind{{"file", c.File}, {"anon", c.Anon}, {"slab", c.Slab}, {"kernel", c.Kernel},
		{"dirty", c.Dirty}, {"writeback", c.Writeback}, {"mapped", c.Mapped}, {"shmem", c.Shmem}}
}
