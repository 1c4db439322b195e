package collect

// Memory cgroups, live and dying, on cgroup v1, v2 or both (hybrid).
//
// A removed memory cgroup stays allocated ("dying") while any page charged to
// it lives (page cache, shmem; before 5.3 also slab). Counting them:
//   - v1: /proc/cgroups num_cgroups of the memory hierarchy counts every
//     allocated cgroup including dying ones; the live ones are the
//     directories of the hierarchy (root included), so dying = num − dirs.
//   - v2: the root's cgroup.stat has nr_dying_descendants (any controller)
//     and, on ≈6.11+, nr_subsys_memory / nr_dying_subsys_memory.
//   - memory bound to v2 on a kernel with /proc/cgroups: hierarchy 0 and
//     num_cgroups counts the whole unified tree, dying included.

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

type cgroupMounts struct {
	v1Memory string // FS-relative mount point of the v1 memory hierarchy
	v2       string // FS-relative mount point of cgroup2
	v2Memory bool   // memory controller enabled on the v2 root
}

func findCgroupMounts(c *ctx) (cgroupMounts, error) {
	var m cgroupMounts
	mounts, skipped, err := c.fs.Mountinfo()
	if err != nil {
		return m, err
	}
	if len(skipped) > 0 {
		c.note("proc/self/mountinfo", fmt.Sprintf("%d malformed line(s) skipped, the first: %v", len(skipped), skipped[0]),
			"a cgroup hierarchy mounted on a skipped line", "")
	}
	for _, mt := range mounts {
		rel := strings.TrimPrefix(path.Clean(mt.MountPoint), "/")
		switch mt.FSType {
		case "cgroup2":
			if m.v2 == "" {
				m.v2 = rel
			}
		case "cgroup":
			for _, o := range mt.SuperOptions {
				if o == "memory" && m.v1Memory == "" {
					m.v1Memory = rel
				}
			}
		}
	}
	if m.v2 != "" {
		ctrl := readTrim(c, m.v2+"/cgroup.controllers")
		for _, f := range strings.Fields(ctrl) {
			if f == "memory" {
				m.v2Memory = true
			}
		}
	}
	return m, nil
}

type cgUsage struct {
	path  string // relative to the hierarchy root, "/" for the root
	bytes int64
}

func collectCgroups(c *ctx) error {
	subs, err := c.fs.Cgroups()
	var memNum int64 = -1
	memHier := -1
	if err == nil {
		for _, s := range subs {
			c.add("node_cgroups_cgroups", float64(s.NumCgroups), "subsys_name", s.Name)
			en := 0.0
			if s.Enabled {
				en = 1
			}
			c.add("node_cgroups_enabled", en, "subsys_name", s.Name)
			if s.Name == "memory" {
				memNum = s.NumCgroups
				if s.Enabled {
					memHier = s.Hierarchy
				}
			}
		}
	} else if !isGone(err) {
		c.note("proc/cgroups", err.Error(), "the v1 count of memory cgroups, dying ones included", "")
	}
	m, err := findCgroupMounts(c)
	if err != nil {
		// Without mountinfo (cron data keeps /proc/cgroups only), the
		// memory controller's hierarchy id still tells the layout: a v1
		// hierarchy has an id, the unified one has 0. Remedies need it to
		// name the right files.
		switch {
		case memHier > 0:
			c.add("memdoctor_cgroup_info", 1, "mode", "unknown", "memory", "v1")
		case memHier == 0:
			c.add("memdoctor_cgroup_info", 1, "mode", "unknown", "memory", "v2")
		}
		return err
	}
	mode := "none"
	switch {
	case m.v1Memory != "" && m.v2 != "":
		mode = "hybrid"
	case m.v1Memory != "":
		mode = "v1"
	case m.v2 != "":
		mode = "v2"
	}
	memOn := "none"
	switch {
	case m.v1Memory != "":
		memOn = "v1"
	case m.v2Memory:
		memOn = "v2"
	}
	c.add("memdoctor_cgroup_info", 1, "mode", mode, "memory", memOn)

	var v2stat procfs.KV
	if m.v2 != "" {
		if v2stat, err = c.fs.CgroupKV(m.v2 + "/cgroup.stat"); err == nil {
			for _, k := range v2stat.Keys {
				v := float64(v2stat.Num[k])
				switch {
				case k == "nr_descendants" || k == "nr_dying_descendants":
					c.add("memdoctor_cgroup2_"+k, v)
				case strings.HasPrefix(k, "nr_dying_subsys_"):
					c.add("memdoctor_cgroup2_dying_subsys", v, "subsys", strings.TrimPrefix(k, "nr_dying_subsys_"))
				case strings.HasPrefix(k, "nr_subsys_"):
					c.add("memdoctor_cgroup2_subsys", v, "subsys", strings.TrimPrefix(k, "nr_subsys_"))
				}
			}
		} else {
			c.note(m.v2+"/cgroup.stat", err.Error(), "dying cgroups of the unified hierarchy", "")
		}
	}

	var root, usageFile string
	switch memOn {
	case "v1":
		root, usageFile = m.v1Memory, "memory.usage_in_bytes"
	case "v2":
		root, usageFile = m.v2, "memory.current"
	default:
		c.note("cgroups", "no memory cgroup hierarchy is mounted", "memory cgroups and dying cgroups", "mount cgroup2 (or the v1 memory controller)")
		return nil
	}
	usages, dirs, capped := walkCgroups(c, root, usageFile)
	if capped {
		c.note(root, "more than the directory limit of memory cgroups; counted the first ones only",
			"the exact live/dying split (dying is over-estimated)", "raise the cgroup directory limit")
	}
	live := int64(dirs)
	var dying int64 = -1
	switch memOn {
	case "v1":
		if memNum >= 0 {
			dying = max(memNum-live, 0)
		}
	case "v2":
		if v, ok := v2stat.Get("nr_subsys_memory"); ok {
			live = v
		}
		if v, ok := v2stat.Get("nr_dying_subsys_memory"); ok {
			dying = v
		} else if v, ok := v2stat.Get("nr_dying_descendants"); ok {
			dying = v
			c.note(m.v2+"/cgroup.stat", "nr_dying_subsys_memory is absent (kernel before ≈6.11): dying cgroups of any controller are counted as memory cgroups",
				"", "")
		}
	}
	c.add("memdoctor_memcg_live_cgroups", float64(live))
	if dying >= 0 {
		c.add("memdoctor_memcg_dying_cgroups", float64(dying))
	}

	sort.Slice(usages, func(i, j int) bool { return usages[i].bytes > usages[j].bytes })
	n := 0
	for _, u := range usages {
		if n >= c.opt.TopCgroups {
			break
		}
		if u.path == "/" {
			continue
		}
		n++
		dir := root + u.path
		c.add("memdoctor_cgroup_memory_usage_bytes", float64(u.bytes), "cgroup", u.path)
		limitFile := "/memory.max"
		if memOn == "v1" {
			limitFile = "/memory.limit_in_bytes"
		}
		// "max" reads as -1; v1 prints "unlimited" as a huge page-aligned number.
		if lim, err := c.fs.CgroupInt(dir + limitFile); err == nil && lim >= 0 && lim < 1<<62 {
			c.add("memdoctor_cgroup_memory_limit_bytes", float64(lim), "cgroup", u.path)
		}
		st, err := c.fs.CgroupKV(dir + "/memory.stat")
		if err != nil {
			continue
		}
		anon, file, shmem := "anon", "file", "shmem"
		if memOn == "v1" {
			anon, file, shmem = "total_rss", "total_cache", "total_shmem"
		}
		c.add("memdoctor_cgroup_memory_anon_bytes", float64(st.Value(anon)), "cgroup", u.path)
		c.add("memdoctor_cgroup_memory_file_bytes", float64(st.Value(file)), "cgroup", u.path)
		c.add("memdoctor_cgroup_memory_shmem_bytes", float64(st.Value(shmem)), "cgroup", u.path)
		if memOn == "v2" {
			if ev, err := c.fs.CgroupKV(dir + "/memory.events"); err == nil {
				for _, k := range ev.Keys {
					c.add("memdoctor_cgroup_memory_events_total", float64(ev.Num[k]), "cgroup", u.path, "event", k)
				}
			}
		}
	}
	return nil
}

// walkCgroups counts the directories of a hierarchy (root included) and
// reads each one's usage file, up to MaxCgroupDirs directories.
func walkCgroups(c *ctx, root, usageFile string) (usages []cgUsage, dirs int, capped bool) {
	queue := []string{""}
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		if dirs >= c.opt.MaxCgroupDirs {
			return usages, dirs, true
		}
		dirs++
		p := rel
		if p == "" {
			p = "/"
		}
		if v, err := c.fs.CgroupInt(root + rel + "/" + usageFile); err == nil {
			usages = append(usages, cgUsage{p, v})
		}
		ents, err := c.fs.ReadDir(root + rel)
		if err != nil {
			continue // removed while walking
		}
		for _, e := range ents {
			if e.IsDir() {
				queue = append(queue, rel+"/"+e.Name())
			}
		}
	}
	return usages, dirs, false
}
