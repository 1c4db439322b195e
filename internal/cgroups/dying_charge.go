package cgroups

import (
	"path"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// ChildUsage sums, for each cgroup of a scan, the usage of its live
// children (the cgroups one level below it that the scan read).
func ChildUsage(briefs []Brief) map[string]int64 {
	sum := map[string]int64{}
	for _, b := range briefs {
		if b.Path != "/" {
			sum[path.Dir(b.Path)] += b.Usage
		}
	}
	return sum
}

// DyingCharge is, on v2, the charge held by a cgroup's dying
// descendants: a cgroup with no processes of its own is charged only
// through its children, so what its usage holds beyond its live
// children's (children, their summed usage) is charge left by removed
// ones (page cache, kernel memory) or reparented to it when they went.
// dying is its cgroup.stat's nr_dying_descendants; ok is false on v1
// (memory.usage_in_bytes mixes in the processes' own charge and dying
// cgroups are not counted per cgroup), for the root, when it has no dying
// descendants, or when its own processes could not be ruled out.
func (r Reader) DyingCharge(cg string, usage, children int64) (charge, dying int64, ok bool) {
	if r.V1 || cg == "/" {
		return 0, 0, false
	}
	st, err := ReadCgroupStat(r.FS, r.dirName(cg))
	if err != nil {
		return 0, 0, false
	}
	if dying, ok = st.Dying(); !ok || dying <= 0 {
		return 0, 0, false
	}
	if own, known := r.hasOwnProcs(cg); !known || own {
		return 0, dying, false
	}
	return max(usage-children, 0), dying, true
}

// hasOwnProcs says whether cgroup.procs of cg itself (not its
// descendants) lists a process; known is false when it could not be read.
func (r Reader) hasOwnProcs(cg string) (own, known bool) {
	f, ok := r.open(cg)
	if !ok {
		return false, false
	}
	defer f.close()
	data, err := f.d.ReadSmall("cgroup.procs")
	if err != nil {
		return false, false
	}
	pids, more, err := procfs.ParseCgroupProcs(data, r.file(cg, "cgroup.procs"), 1)
	if err != nil {
		return false, false
	}
	return len(pids) > 0 || more, true
}
