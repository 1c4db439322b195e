package cgroups

import "sort"

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
