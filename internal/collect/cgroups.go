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
	"sort"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/cgroups"
)

func init() { register(90, "cgroups", false, collectCgroups) }

// findCgroupMounts finds the hierarchies, noting mountinfo's malformed
// lines.
func findCgroupMounts(c *ctx) (cgroups.Mounts, error) {
	m, skipped, err := cgroups.FindMounts(c.fs)
	if err != nil {
		return m, err
	}
	if len(skipped) > 0 {
		c.note("proc/self/mountinfo", fmt.Sprintf("%d malformed line(s) skipped, the first: %v", len(skipped), skipped[0]),
			"a cgroup hierarchy mounted on a skipped line", "")
	}
	return m, nil
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
	root, v1, ok := m.Memory()
	memOn := "none"
	switch {
	case ok && v1:
		memOn = "v1"
	case ok:
		memOn = "v2"
	}
	c.add("memdoctor_cgroup_info", 1, "mode", m.Mode(), "memory", memOn)

	var v2stat cgroups.CgroupStat
	if m.V2 != "" {
		if v2stat, err = cgroups.ReadCgroupStat(c.fs, m.V2); err == nil {
			for _, n := range v2stat.Counts() {
				v := float64(n.Value)
				switch {
				case n.Subsys == "":
					c.add("memdoctor_cgroup2_"+n.Key, v)
				case n.Dying:
					c.add("memdoctor_cgroup2_dying_subsys", v, "subsys", n.Subsys)
				default:
					c.add("memdoctor_cgroup2_subsys", v, "subsys", n.Subsys)
				}
			}
		} else {
			c.note(m.V2+"/cgroup.stat", err.Error(), "dying cgroups of the unified hierarchy", "")
		}
	}

	if !ok {
		c.note("cgroups", "no memory cgroup hierarchy is mounted", "memory cgroups and dying cgroups", "mount cgroup2 (or the v1 memory controller)")
		return nil
	}
	// A selection that compares readings counts v1's limit hits too.
	r := cgroups.Reader{FS: c.fs, Root: root, V1: v1, Failcnt: c.opt.CgroupEvents != nil}
	briefs, dirs, capped := r.Scan(c.opt.MaxCgroupDirs)
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
		if v, exact, ok := v2stat.DyingMemory(); ok {
			dying = v
			if !exact {
				c.note(m.V2+"/cgroup.stat", "nr_dying_subsys_memory is absent (kernel before ≈6.11): dying cgroups of any controller are counted as memory cgroups",
					"", "")
			}
		}
	}
	c.add("memdoctor_memcg_live_cgroups", float64(live))
	if dying >= 0 {
		c.add("memdoctor_memcg_dying_cgroups", float64(dying))
	}
	c.opt.Names.Begin()
	focused := c.opt.FocusCgroup == ""
	var near []cgroups.Memory
	// The charge of dying descendants needs every live child's usage.
	var childUsage map[string]int64
	if !v1 && !capped {
		childUsage = cgroups.ChildUsage(briefs)
	}
	for _, b := range c.opt.CgroupEvents.Select(briefs, c.opt.TopCgroups, c.opt.ExtraCgroups) {
		mem := r.ReadBrief(b)
		addCgroup(c, &mem)
		addDyingCharge(c, r, childUsage, mem.Path, mem.Usage)
		focused = focused || b.Path == c.opt.FocusCgroup
		if nearLimit(&mem) {
			near = append(near, mem)
		}
	}
	if !focused {
		if mem, ok := r.Read(c.opt.FocusCgroup); ok {
			addCgroup(c, &mem)
			addDyingCharge(c, r, childUsage, mem.Path, mem.Usage)
			if nearLimit(&mem) {
				near = append(near, mem)
			}
		} else {
			c.note(root+c.opt.FocusCgroup, "the focused cgroup has no memory accounting (removed, or the memory controller is not enabled for it)",
				"its accounting, limits, events and pressure", "")
		}
	}
	if c.opt.TopProcesses > 0 {
		oomCandidates(c, r, near)
	}
	return nil
}

// The OOM killer's likely choice is looked for in at most oomCgroups
// cgroups near their limit (the nearest first: as many as
// cgroup_near_limit reports), walking at most oomDirs cgroups below each;
// a cgroup with more than oomCgroupProcs processes is not looked into,
// and at most oomProcs processes are read in all: a collection's cost
// stays bounded however many processes a large slice holds.
const (
	oomCgroups     = 10
	oomDirs        = 256
	oomCgroupProcs = 500
	oomProcs       = 1000
)

// nearLimit: usage within cgroups.NearShare of the lower of memory.max and
// memory.high, where the working set the rules judge may be near it too.
func nearLimit(m *cgroups.Memory) bool {
	l := m.Limit()
	return l > 0 && float64(m.Usage) >= cgroups.NearShare*float64(l)
}

// oomCandidates names, for each cgroup near its limit, the process the
// kernel's OOM killer would most likely kill when the limit is hit: it
// chooses among the tasks of the cgroup and its descendants the one with
// the highest badness (mm/oom_kill.c oom_badness): RSS + swap + page
// tables, plus oom_score_adj thousandths of the memory the cgroup may use
// (its memory.max and the swap it may take); a process at oom_score_adj
// -1000, and the host's init, are never chosen. A cgroup whose process
// list is incomplete (a bound reached, a list unreadable) names none: the
// largest of those read may not be the one.
func oomCandidates(c *ctx, r cgroups.Reader, near []cgroups.Memory) {
	share := func(m *cgroups.Memory) float64 { return float64(m.Usage) / float64(m.Limit()) }
	sort.SliceStable(near, func(i, j int) bool { return share(&near[i]) > share(&near[j]) })
	near = near[:min(len(near), oomCgroups)]
	hostSwap := int64(c.res.Snapshot.Value("node_memory_SwapTotal_bytes"))
	budget := oomProcs
	for i := range near {
		m := &near[i]
		limit := min(oomCgroupProcs, budget)
		pids, complete := r.Procs(m.Path, oomDirs, limit)
		if !complete {
			if len(pids) > 0 {
				c.note(r.Root+m.Path, fmt.Sprintf("more processes or cgroups in it than read (%d processes in %d cgroups at most): the OOM killer's likely choice is not named", limit, oomDirs),
					"which of its processes the OOM killer would kill", "")
			}
			continue
		}
		budget -= len(pids)
		// What the cgroup may use when the OOM killer runs: memory.max (or
		// the lower memory.high the rules judge against) and its swap.
		room := m.Max
		if room == cgroups.Unlimited {
			room = m.Limit()
		}
		swap := hostSwap
		if m.SwapMax != cgroups.Unlimited {
			swap = min(m.SwapMax, hostSwap)
		}
		room += swap
		type cand struct {
			pid          int
			comm         string
			bytes, score int64
			adj          int
		}
		var best *cand
		n := 0
		for _, pid := range pids {
			st, err := c.fs.ProcStatus(pid)
			if err != nil {
				continue // gone (or not readable: not counted)
			}
			rss, ok := st.Get("VmRSS")
			if !ok {
				continue // a kernel thread: no memory of its own
			}
			n++
			adj, err := c.fs.ProcOOMScoreAdj(pid)
			if err != nil || adj == -1000 || pid == 1 {
				continue
			}
			b := rss + st.Value("VmSwap") + st.Value("VmPTE")
			x := cand{pid: pid, comm: st.Text["Name"], bytes: b, adj: adj, score: b + int64(adj)*(room/1000)}
			if best == nil || x.score > best.score || x.score == best.score && x.bytes > best.bytes {
				best = &x
			}
		}
		c.add("memdoctor_cgroup_processes", float64(n), "cgroup", m.Path)
		if best != nil {
			l := []string{"cgroup", m.Path, "pid", strconv.Itoa(best.pid), "comm", best.comm}
			c.add("memdoctor_cgroup_oom_candidate_bytes", float64(best.bytes), l...)
			c.add("memdoctor_cgroup_oom_candidate_score_adj", float64(best.adj), l...)
		}
		if budget <= 0 {
			return
		}
	}
}

// cgroupStats are the memory.stat keys recorded per cgroup (in v2 names;
// anon, file and shmem have series of their own).
var cgroupStats = []string{"active_anon", "inactive_anon", "active_file", "inactive_file", "kernel", "kernel_stack",
	"pagetables", "slab", "slab_reclaimable", "slab_unreclaimable", "sock", "file_mapped", "file_dirty", "file_writeback",
	"anon_thp", "unevictable", "workingset_refault_anon", "workingset_refault_file", "workingset_activate_anon",
	"workingset_activate_file", "workingset_restore_anon", "workingset_restore_file", "pgmajfault"}

// addDyingCharge records, on v2 for a cgroup with dying descendants and
// no processes of its own, the charge they hold: its usage less its live
// children's (childUsage, nil when the scan did not read them all).
func addDyingCharge(c *ctx, r cgroups.Reader, childUsage map[string]int64, p string, usage int64) {
	if childUsage == nil {
		return
	}
	if charge, n, ok := r.DyingCharge(p, usage, childUsage[p]); ok {
		c.add("memdoctor_cgroup_dying_descendants", float64(n), "cgroup", p)
		c.add("memdoctor_cgroup_memory_dying_charge_bytes", float64(charge), "cgroup", p)
	}
}

// addCgroup records one selected cgroup: its accounting, limits, events,
// pressure and who it belongs to.
func addCgroup(c *ctx, m *cgroups.Memory) {
	p := m.Path
	c.add("memdoctor_cgroup_memory_usage_bytes", float64(m.Usage), "cgroup", p)
	limits := []struct {
		name string
		v    int64
		has  string
	}{{"limit", m.Max, "max"}, {"high", m.High, "high"}, {"low", m.Low, "low"}, {"min", m.Min, "min"}, {"peak", m.Peak, "peak"}}
	for _, l := range limits {
		// An unset limit has no series (max, and low/min at 0, say none).
		if !m.Has[l.has] || l.v == cgroups.Unlimited || (l.v == 0 && (l.name == "low" || l.name == "min")) {
			continue
		}
		c.add("memdoctor_cgroup_memory_"+l.name+"_bytes", float64(l.v), "cgroup", p)
	}
	if m.Has["swap"] {
		c.add("memdoctor_cgroup_memory_swap_bytes", float64(m.SwapUsage), "cgroup", p)
		if m.SwapMax != cgroups.Unlimited {
			c.add("memdoctor_cgroup_memory_swap_limit_bytes", float64(m.SwapMax), "cgroup", p)
		}
	}
	if m.Has["stat"] {
		c.add("memdoctor_cgroup_memory_anon_bytes", float64(m.Stat["anon"]), "cgroup", p)
		c.add("memdoctor_cgroup_memory_file_bytes", float64(m.Stat["file"]), "cgroup", p)
		c.add("memdoctor_cgroup_memory_shmem_bytes", float64(m.Stat["shmem"]), "cgroup", p)
		c.add("memdoctor_cgroup_memory_working_set_bytes", float64(m.WorkingSet()), "cgroup", p)
		for _, k := range cgroupStats {
			if v, ok := m.Stat[k]; ok {
				c.add("memdoctor_cgroup_memory_stat", float64(v), "cgroup", p, "stat", k)
			}
		}
	}
	for _, k := range sortedKeys(m.Events) {
		if k == "under_oom" {
			c.add("memdoctor_cgroup_memory_under_oom", float64(m.Events[k]), "cgroup", p)
			continue
		}
		c.add("memdoctor_cgroup_memory_events_total", float64(m.Events[k]), "cgroup", p, "event", k)
	}
	for _, k := range sortedKeys(m.EventsLocal) {
		c.add("memdoctor_cgroup_memory_events_local_total", float64(m.EventsLocal[k]), "cgroup", p, "event", k)
	}
	if m.Has["pressure"] {
		ps := m.Pressure
		c.add("memdoctor_cgroup_memory_pressure_seconds_total", float64(ps.Some.TotalMicros)/1e6, "cgroup", p, "kind", "some")
		c.add("memdoctor_cgroup_memory_pressure_avg10_percent", ps.Some.Avg10, "cgroup", p, "kind", "some")
		c.add("memdoctor_cgroup_memory_pressure_avg60_percent", ps.Some.Avg60, "cgroup", p, "kind", "some")
		if ps.HasFull {
			c.add("memdoctor_cgroup_memory_pressure_seconds_total", float64(ps.Full.TotalMicros)/1e6, "cgroup", p, "kind", "full")
			c.add("memdoctor_cgroup_memory_pressure_avg10_percent", ps.Full.Avg10, "cgroup", p, "kind", "full")
			c.add("memdoctor_cgroup_memory_pressure_avg60_percent", ps.Full.Avg60, "cgroup", p, "kind", "full")
		}
	}
	id := c.opt.Names.Name(p)
	labels := []string{"cgroup", p}
	for _, kv := range [][2]string{{"kind", id.Kind}, {"name", id.Name}, {"runtime", id.Runtime}, {"container_id", id.ContainerID},
		{"pod_uid", id.PodUID}, {"qos", id.QoS}, {"unit", id.Unit}, {"namespace", id.Namespace}, {"pod", id.Pod}, {"container", id.Container}} {
		if kv[1] != "" {
			labels = append(labels, kv[0], kv[1])
		}
	}
	c.add("memdoctor_cgroup_owner_info", 1, labels...)
}

func sortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
