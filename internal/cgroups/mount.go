package cgroups

// Where the hierarchies are mounted, from /proc/self/mountinfo (parsed by
// procfs; this says which lines are cgroup hierarchies):
//
//	v1:     cgroup  mounts, one per hierarchy, the memory one with the
//	        "memory" super option (/sys/fs/cgroup/memory, or joined with
//	        others: /sys/fs/cgroup/cpu,memory; old distributions: /cgroup/memory)
//	v2:     one cgroup2 mount (/sys/fs/cgroup); the memory controller is on
//	        it when its root's cgroup.controllers lists "memory"
//	hybrid: both (systemd's: cgroup2 at /sys/fs/cgroup/unified, usually with
//	        no controller, and the v1 hierarchies beside it)
//
// A controller is bound to one hierarchy at a time, so at most one of the
// v1 memory mount and a v2 mount with the memory controller holds it.

import (
	"path"
	"slices"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Mounts is where the cgroup hierarchies of a host are mounted, as paths
// relative to its FS root ("sys/fs/cgroup"); "" is not mounted.
type Mounts struct {
	// V1Memory is the first v1 hierarchy with the memory controller.
	V1Memory string
	// V2 is the first cgroup2 mount.
	V2 string
	// V2Memory says the memory controller is enabled on V2's root.
	V2Memory bool
}

// FindMounts reads proc/self/mountinfo of f for the cgroup hierarchies. A
// malformed line hides only its own mount: it is returned in skipped. err
// is mountinfo's (unreadable, or no line of it could be read).
func FindMounts(f procfs.FS) (m Mounts, skipped []*procfs.ParseError, err error) {
	mounts, skipped, err := f.Mountinfo()
	if err != nil {
		return m, skipped, err
	}
	for _, mt := range mounts {
		rel := strings.TrimPrefix(path.Clean(mt.MountPoint), "/")
		switch mt.FSType {
		case "cgroup2":
			if m.V2 == "" {
				m.V2 = rel
			}
		case "cgroup":
			if m.V1Memory == "" && slices.Contains(mt.SuperOptions, "memory") {
				m.V1Memory = rel
			}
		}
	}
	if m.V2 != "" {
		if ctrl, err := f.ReadFile(m.V2 + "/cgroup.controllers"); err == nil {
			m.V2Memory = slices.Contains(strings.Fields(string(ctrl)), "memory")
		}
	}
	return m, skipped, nil
}

// Mode is the layout: "hybrid" (v1 memory and cgroup2 both mounted), "v1",
// "v2" or "none".
func (m Mounts) Mode() string {
	switch {
	case m.V1Memory != "" && m.V2 != "":
		return "hybrid"
	case m.V1Memory != "":
		return "v1"
	case m.V2 != "":
		return "v2"
	}
	return "none"
}

// Memory is the hierarchy holding the memory controller: v1's when
// mounted, else the unified one when the controller is enabled on it; ok
// is false when neither.
func (m Mounts) Memory() (root string, v1 bool, ok bool) {
	switch {
	case m.V1Memory != "":
		return m.V1Memory, true, true
	case m.V2Memory:
		return m.V2, false, true
	}
	return "", false, false
}

// Reader reads the memory hierarchy's cgroups; ok is false when no
// hierarchy holds the memory controller.
func (m Mounts) Reader(f procfs.FS) (r Reader, ok bool) {
	root, v1, ok := m.Memory()
	return Reader{FS: f, Root: root, V1: v1}, ok
}
