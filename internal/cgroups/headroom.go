package cgroups

import (
	"path"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Headroom is what pid's memory cgroup may still be charged before a
// limit is met, its own or one of a cgroup above it: the least of limit
// minus usage over them (v2's memory.high counts as a limit, as in
// Brief), at least 0. limited is false when none of them sets a limit,
// or no hierarchy holds the memory controller. Page cache that reclaim
// could free counts as used: the figure errs low.
func Headroom(f procfs.FS, pid int) (bytes int64, limited bool, err error) {
	m, _, err := FindMounts(f)
	if err != nil {
		return 0, false, err
	}
	r, ok := m.Reader(f)
	if !ok {
		return 0, false, nil
	}
	lines, err := ReadProcCgroup(f, pid)
	if err != nil {
		return 0, false, err
	}
	cg := ""
	for _, l := range lines {
		if (r.V1 && l.Has("memory")) || (!r.V1 && l.Unified()) {
			cg = l.Path
		}
	}
	if cg == "" || cg[0] != '/' {
		return 0, false, nil
	}
	// A hierarchy is a few levels deep; the bound is for a hostile path.
	for depth := 0; depth < 64; depth++ {
		if b, ok := r.Brief(cg); ok && b.Limit != Unlimited {
			if h := max(b.Limit-b.Usage, 0); !limited || h < bytes {
				bytes = h
			}
			limited = true
		}
		if cg == "/" {
			break
		}
		cg = path.Dir(cg)
	}
	return bytes, limited, nil
}
