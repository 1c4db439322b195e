package cgroups

// The files of the hierarchy as a whole and of one process, read here for
// every package that needs them (collect, cgreclaim, pagescan, cgtrace):
//
//	cgroup.stat (v2, kernel/cgroup/cgroup.c, cgroup_stat_show):
//	    nr_descendants 12
//	    nr_dying_descendants 49      (removed, still allocated: any controller)
//	    nr_subsys_memory 13          (≈6.11+: per controller, the cgroup
//	    nr_dying_subsys_memory 40     itself included)
//	proc/cgroups (the memory line): the memory hierarchy's id (0: the
//	    unified tree) and its number of cgroups, dying ones included; v1 has
//	    no per-cgroup count of dying cgroups, so dying = that number less
//	    the directories of the hierarchy
//	memory.stat (v1): local keys (cache, rss, mapped_file, dirty,
//	    writeback, shmem, ...) and hierarchical total_* ones; v2's keys are
//	    hierarchical only (see the package comment for the names)
//	proc/PID/cgroup: "hierarchy-id:controllers:path" a line; v2's line is
//	    "0::/path", a v1 hierarchy's "4:memory:/path" (controllers joined by
//	    commas, named hierarchies as "name=systemd")

import (
	"errors"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// CgroupStat is a v2 cgroup's cgroup.stat, every key kept.
type CgroupStat struct{ procfs.KV }

// ReadCgroupStat reads dir's cgroup.stat (dir FS-relative, a cgroup's
// directory or the mount point for the root).
func ReadCgroupStat(f procfs.FS, dir string) (CgroupStat, error) {
	kv, err := f.CgroupKV(dir + "/cgroup.stat")
	return CgroupStat{kv}, err
}

// Dying is nr_dying_descendants: the removed cgroups below, of any
// controller, the kernel still holds.
func (s CgroupStat) Dying() (int64, bool) { return s.Get("nr_dying_descendants") }

// DyingMemory is nr_dying_subsys_memory (≈6.11+), the removed memory
// cgroups held; exact is false when the kernel has no such key and the
// count is nr_dying_descendants (dying cgroups of any controller).
func (s CgroupStat) DyingMemory() (n int64, exact, ok bool) {
	if v, ok := s.Get("nr_dying_subsys_memory"); ok {
		return v, true, true
	}
	v, ok := s.Dying()
	return v, false, ok
}

// StatCount is one of cgroup.stat's counts of the hierarchy below a
// cgroup: Key as the kernel names it (nr_descendants,
// nr_dying_descendants, nr_subsys_<controller>,
// nr_dying_subsys_<controller>); Subsys names the controller of a
// per-controller count, and Dying says the count is of removed cgroups the
// kernel still holds.
type StatCount struct {
	Key    string
	Subsys string
	Dying  bool
	Value  int64
}

// Counts lists the file's counts of cgroups in its order (other keys are
// left out).
func (s CgroupStat) Counts() []StatCount {
	var out []StatCount
	for _, k := range s.Keys {
		c := StatCount{Key: k, Value: s.Num[k]}
		switch {
		case k == "nr_descendants":
		case k == "nr_dying_descendants":
			c.Dying = true
		case strings.HasPrefix(k, "nr_dying_subsys_"):
			c.Dying, c.Subsys = true, strings.TrimPrefix(k, "nr_dying_subsys_")
		case strings.HasPrefix(k, "nr_subsys_"):
			c.Subsys = strings.TrimPrefix(k, "nr_subsys_")
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

// MemoryStat is a memory.stat file, its keys as the kernel names them.
type MemoryStat struct{ procfs.KV }

// ReadMemoryStat reads dir's memory.stat (dir FS-relative).
func ReadMemoryStat(f procfs.FS, dir string) (MemoryStat, error) {
	kv, err := f.CgroupKV(dir + "/memory.stat")
	return MemoryStat{kv}, err
}

// V1Local is a v1 memory.stat's own (non-hierarchical) counters in v2
// names: anon (rss), file (cache), file_mapped, file_dirty,
// file_writeback and shmem, in bytes; a key the file lacks is absent.
func (s MemoryStat) V1Local() map[string]int64 {
	out := make(map[string]int64, 6)
	for k, v2 := range map[string]string{"cache": "file", "rss": "anon", "dirty": "file_dirty",
		"writeback": "file_writeback", "mapped_file": "file_mapped", "shmem": "shmem"} {
		if v, ok := s.Get(k); ok {
			out[v2] = v
		}
	}
	return out
}

// ErrNoMemoryController is proc/cgroups without a memory line.
var ErrNoMemoryController = errors.New("/proc/cgroups has no memory line")

// MemoryController is the memory line of proc/cgroups.
func MemoryController(f procfs.FS) (procfs.CgroupSubsys, error) {
	subs, err := f.Cgroups()
	if err != nil {
		return procfs.CgroupSubsys{}, err
	}
	for _, s := range subs {
		if s.Name == "memory" {
			return s, nil
		}
	}
	return procfs.CgroupSubsys{}, ErrNoMemoryController
}

// MemoryHierarchyID is the id of the hierarchy the memory controller is
// bound to (0: the unified tree), from proc/cgroups; -1 when it is not
// enabled or not known.
func MemoryHierarchyID(f procfs.FS) int {
	if s, err := MemoryController(f); err == nil && s.Enabled {
		return s.Hierarchy
	}
	return -1
}

// DyingV1 is v1's count of dying memory cgroups: proc/cgroups' memory
// cgroups less live, the directories of the hierarchy (root included).
func DyingV1(f procfs.FS, live int64) (int64, error) {
	s, err := MemoryController(f)
	if err != nil {
		return 0, err
	}
	return max(s.NumCgroups-live, 0), nil
}

// ProcCgroup is one line of proc/PID/cgroup.
type ProcCgroup struct {
	// ID is the hierarchy id, "0" for the unified tree.
	ID string
	// Controllers are the v1 hierarchy's controllers ("memory";
	// "name=systemd" for a named one); none on the unified line.
	Controllers []string
	// Path is the cgroup's path within its hierarchy ("/system.slice/x.service").
	Path string
}

// Unified says the line is the cgroup v2 tree's.
func (c ProcCgroup) Unified() bool { return c.ID == "0" && len(c.Controllers) == 0 }

// Has says the line is the hierarchy of controller ("memory", "name=systemd").
func (c ProcCgroup) Has(controller string) bool {
	for _, x := range c.Controllers {
		if x == controller {
			return true
		}
	}
	return false
}

// maxProcCgroupLines bounds the lines kept of one proc/PID/cgroup (a
// kernel has at most a few dozen hierarchies).
const maxProcCgroupLines = 256

// ParseProcCgroup parses proc/PID/cgroup; a line without the two colons is
// skipped, and at most maxProcCgroupLines lines are kept.
func ParseProcCgroup(data []byte) []ProcCgroup {
	// One copy of the file, which every ID and path below is a part of,
	// and the result sized at once: a split into lines, then each line
	// into its three fields, allocated some 2.8 KB for a file of 151 bytes.
	text := string(data)
	out := make([]ProcCgroup, 0, min(strings.Count(text, "\n")+1, maxProcCgroupLines))
	for len(text) > 0 && len(out) < maxProcCgroupLines {
		l := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		id, rest, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		c := ProcCgroup{ID: id, Path: path}
		if ctrls != "" {
			c.Controllers = strings.Split(ctrls, ",")
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ReadProcCgroup reads and parses proc/PID/cgroup of f.
func ReadProcCgroup(f procfs.FS, pid int) ([]ProcCgroup, error) {
	return procfs.ReadParsed(f, "proc/"+strconv.Itoa(pid)+"/cgroup", func(b []byte) ([]ProcCgroup, error) {
		return ParseProcCgroup(b), nil // copies what it keeps (string(data))
	})
}
