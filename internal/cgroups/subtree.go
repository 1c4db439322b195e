package cgroups

// Walks of a v1 subtree by path, bounded, for the remedy that writes
// memory.force_empty (which must not touch a cgroup with tasks).

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// CountDirs counts dir (FS-relative) and the directories below it: the
// live cgroups of a subtree, the root included; more than maxDirs is an
// error. A directory removed while walking is not counted.
func CountDirs(f procfs.FS, dir string, maxDirs int) (int64, error) {
	n := int64(0)
	queue := []string{dir}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if n++; n > int64(maxDirs) {
			return 0, fmt.Errorf("more than %d cgroups under /%s", maxDirs, dir)
		}
		ents, err := f.ReadDir(d)
		if err != nil {
			if procfs.IsNotExist(err) && d != dir {
				n--
				continue // removed while walking
			}
			return 0, err
		}
		for _, e := range ents {
			if e.IsDir() {
				queue = append(queue, d+"/"+e.Name())
			}
		}
	}
	return n, nil
}

// SubtreeTasks is the number of tasks (v1's tasks files: threads) in dir
// (FS-relative) and below, and the first few; more than maxDirs cgroups is
// an error.
func SubtreeTasks(f procfs.FS, dir string, maxDirs int) (int, []string, error) {
	n, seen := 0, 0
	var first []string
	queue := []string{dir}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if seen++; seen > maxDirs {
			return 0, nil, fmt.Errorf("more than %d cgroups under /%s", maxDirs, dir)
		}
		b, err := f.ReadFile(d + "/tasks")
		if err != nil {
			if procfs.IsNotExist(err) && d != dir {
				continue
			}
			return 0, nil, err
		}
		for _, t := range strings.Fields(string(b)) {
			n++
			if len(first) < 3 {
				first = append(first, t)
			}
		}
		ents, err := f.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				queue = append(queue, d+"/"+e.Name())
			}
		}
	}
	return n, first, nil
}
