package cgroups

import (
	"sort"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Scan walks the hierarchy breadth-first and reads every cgroup's Brief
// (through its open directory: one path walk a cgroup),
// up to maxDirs directories (root included); dirs counts the directories
// seen, capped says the walk stopped at maxDirs. A cgroup removed while
// walking is skipped.
func (r Reader) Scan(maxDirs int) (briefs []Brief, dirs int, capped bool) {
	queue := []string{""}
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		if dirs >= maxDirs {
			return briefs, dirs, true
		}
		dirs++
		p := rel
		if p == "" {
			p = "/"
		}
		f, ok := r.open(p)
		if !ok {
			continue
		}
		if b, ok := f.brief(); ok {
			briefs = append(briefs, b)
		}
		subs, err := f.d.SubDirs()
		f.close()
		if err != nil {
			continue
		}
		sort.Strings(subs) // the same walk, whatever order the file system lists
		for _, name := range subs {
			queue = append(queue, rel+"/"+name)
		}
	}
	return briefs, dirs, false
}

// Procs lists the processes of a cgroup and of every cgroup below it
// (cgroup.procs, in the order walked): the tasks the OOM killer chooses
// from when the cgroup's limit is hit. It walks at most maxDirs
// directories and keeps at most maxPids processes; complete is false when
// a bound stopped it or a cgroup.procs could not be read (the list then
// misses some). A cgroup removed while walking is skipped.
func (r Reader) Procs(cg string, maxDirs, maxPids int) (pids []int, complete bool) {
	if maxPids < 1 {
		return nil, false
	}
	complete = true
	queue := []string{cg}
	dirs := 0
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if dirs >= maxDirs {
			return pids, false
		}
		dirs++
		f, ok := r.open(p)
		if !ok {
			if p == cg {
				return nil, false // the cgroup itself is gone: nothing known
			}
			continue
		}
		data, err := f.d.ReadSmall("cgroup.procs")
		if err != nil {
			// Not a removed cgroup (its directory opened): a file this
			// FS lacks (a capture) or may not read.
			complete = false
		} else {
			got, more, err := procfs.ParseCgroupProcs(data, r.file(p, "cgroup.procs"), max(maxPids-len(pids), 1))
			if len(pids)+len(got) > maxPids {
				more, got = true, got[:maxPids-len(pids)]
			}
			pids = append(pids, got...)
			if err != nil || more {
				f.close()
				return pids, false
			}
		}
		subs, err := f.d.SubDirs()
		f.close()
		if err != nil {
			continue
		}
		sort.Strings(subs)
		base := p
		if base == "/" {
			base = ""
		}
		for _, name := range subs {
			queue = append(queue, base+"/"+name)
		}
	}
	return pids, complete
}
