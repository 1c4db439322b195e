package cgtrace

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
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
	var v2 string
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if !ok || len(pf) < 5 || len(qf) < 3 {
			continue
		}
		switch qf[0] {
		case "cgroup":
			for _, o := range strings.Split(qf[2], ",") {
				if o == "memory" {
					return unescapeMount(pf[4])
				}
			}
		case "cgroup2":
			if v2 == "" {
				v2 = unescapeMount(pf[4])
			}
		}
	}
	return v2
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, ok := octal3(s[i+1 : i+4]); ok {
				b.WriteByte(n)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal3(s string) (byte, bool) {
	if len(s) != 3 {
		return 0, false
	}
	var n int
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		n = n*8 + int(c-'0')
	}
	return byte(n), n < 256
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
