package cgtrace

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

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
	b, err := os.ReadFile(proc + "/self/mountinfo")
	if err != nil {
		return ""
	}
	mounts, _, _ := procfs.ParseMountinfo(b) // a bad line hides only its mount
	var v2 string
	for _, m := range mounts {
		switch {
		case m.FSType == "cgroup" && slices.Contains(m.SuperOptions, "memory"):
			return m.MountPoint
		case m.FSType == "cgroup2" && v2 == "":
			v2 = m.MountPoint
		}
	}
	return v2
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
	_ = filepath.WalkDir(m.mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == m.mount {
				return err
			}
			return nil // removed while walking
		}
		if !d.IsDir() {
			return nil
		}
		if len(m.paths) >= maxMemcgPaths {
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		rel := strings.TrimPrefix(p, m.mount)
		if rel == "" {
			rel = "/"
		}
		m.paths[st.Ino] = rel
		return nil
	})
}

// known returns the path of id when the trace saw it made or removed, or a
// walk found it, without walking ("" otherwise).
func (m *memcgPaths) known(id uint64) string { return m.paths[id] }
