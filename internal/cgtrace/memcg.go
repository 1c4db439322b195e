package cgtrace

import (
	"bytes"
	"path/filepath"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// maxMemcgPaths bounds the id → path cache (and so one walk of the
// hierarchy).
const maxMemcgPaths = 1 << 14

// rewalkEvery is the least time between two walks of the hierarchy for an
// id not known yet.
const rewalkEvery = time.Second

// memcgPaths names memory cgroups by the id the kernel records (the kernfs
// id, which is the inode number of the cgroup's directory): from the cgroups
// the trace saw created, and else from a walk of the memory hierarchy's
// mount, repeated at most once a second for an id it does not know.
type memcgPaths struct {
	mount  string // where the memory hierarchy is mounted ("": unknown)
	paths  map[uint64]string
	walked time.Time
	walks  int
}

func newMemcgPaths(proc string) *memcgPaths {
	return &memcgPaths{mount: MemoryMount(proc), paths: map[uint64]string{}}
}

// MemoryMount finds where the memory controller's hierarchy is mounted: a
// cgroup v1 mount with the memory option, else the cgroup2 mount ("" when
// neither is mounted).
func MemoryMount(proc string) string {
	m, _, err := cgroups.FindMounts(procFS(proc)) // a bad line hides only its mount
	if err != nil {
		return ""
	}
	switch {
	case m.V1Memory != "":
		return "/" + m.V1Memory
	case m.V2 != "":
		return "/" + m.V2
	}
	return ""
}

// procFS reads the host whose proc mount is proc ("/proc": the live host);
// a proc mount named otherwise has no host around it, and reads nothing.
func procFS(proc string) procfs.FS {
	if filepath.Base(proc) != "proc" {
		return procfs.NewFS(proc + "/nothing")
	}
	return procfs.NewFS(filepath.Dir(proc))
}

// learn records a cgroup the trace saw made or removed in the memory
// hierarchy, its path NUL-terminated in b; one already known (its removal
// after its creation) costs no allocation.
func (m *memcgPaths) learn(id uint64, b []byte) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if id == 0 || len(b) == 0 {
		return
	}
	if p, ok := m.paths[id]; ok && p == string(b) {
		return
	}
	if len(m.paths) >= maxMemcgPaths {
		clear(m.paths)
	}
	m.paths[id] = string(b)
}

// name returns the path of memory cgroup id inside its hierarchy ("/" for
// the root), or "" when it is not there (removed before it was looked up).
func (m *memcgPaths) name(id uint64) string {
	if id == 0 {
		return ""
	}
	if p, ok := m.paths[id]; ok {
		return p
	}
	if m.mount == "" || time.Since(m.walked) < rewalkEvery {
		return ""
	}
	m.walk()
	return m.paths[id]
}

// walk reads the inode of every directory of the hierarchy.
func (m *memcgPaths) walk() {
	m.walked = time.Now()
	m.walks++
	if len(m.paths) >= maxMemcgPaths/2 {
		clear(m.paths)
	}
	_, _ = cgroups.WalkInodes(m.mount, maxMemcgPaths, func(ino uint64, rel string) bool {
		if len(m.paths) >= maxMemcgPaths {
			return false
		}
		m.paths[ino] = rel
		return true
	})
}

// known returns the path of id when the trace saw it made or removed, or a
// walk found it, without walking ("" otherwise).
func (m *memcgPaths) known(id uint64) string { return m.paths[id] }
