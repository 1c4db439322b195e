package cgroups

// Scan walks the hierarchy breadth-first and reads every cgroup's Brief,
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
		if b, ok := r.Brief(p); ok {
			briefs = append(briefs, b)
		}
		ents, err := r.FS.ReadDir(r.Root + rel)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				queue = append(queue, rel+"/"+e.Name())
			}
		}
	}
	return briefs, dirs, false
}
