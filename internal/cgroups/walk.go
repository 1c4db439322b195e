package cgroups

import (
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// WalkInodes walks the directories of the hierarchy mounted at mount (an
// absolute path on the live host), the root first, in lexical order,
// calling fn with each directory's inode number (the cgroup id the kernel
// reports in /proc/kpagecgroup and in its trace events) and its path
// relative to the mount ("/" for the root). It stops when fn returns false
// or after maxDirs directories (capped is then true). A directory removed
// while walking is skipped; err is the root's only.
func WalkInodes(mount string, maxDirs int, fn func(ino uint64, rel string) bool) (capped bool, err error) {
	dirs := 0
	err = filepath.WalkDir(mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == mount {
				return err
			}
			return nil // removed while walking
		}
		if !d.IsDir() {
			return nil
		}
		if dirs >= maxDirs {
			capped = true
			return filepath.SkipAll
		}
		dirs++
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		rel := strings.TrimPrefix(p, mount)
		if rel == "" {
			rel = "/"
		}
		if !fn(uint64(st.Ino), rel) { //nolint:unconvert // Ino is not uint64 everywhere
			return filepath.SkipAll
		}
		return nil
	})
	return capped, err
}
