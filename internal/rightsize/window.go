package rightsize

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// WindowSeries are the series of memdoctor's recording a recommendation
// reads (a store reads only these).
var WindowSeries = []string{
	"memdoctor_cgroup_memory_usage_bytes", "memdoctor_cgroup_memory_anon_bytes", "memdoctor_cgroup_memory_file_bytes",
	"memdoctor_cgroup_memory_shmem_bytes", "memdoctor_cgroup_memory_stat", "memdoctor_cgroup_memory_limit_bytes",
	"memdoctor_cgroup_memory_high_bytes", "memdoctor_cgroup_memory_events_total", "memdoctor_cgroup_memory_pressure_seconds_total",
	"memdoctor_cgroup_owner_info", "memdoctor_process_cgroup_info", "memdoctor_runtime_info",
	"memdoctor_runtime_heap_limit_bytes", "memdoctor_runtime_heap_committed_bytes", "memdoctor_runtime_heap_live_bytes",
	"memdoctor_process_malloc_arenas", "memdoctor_process_malloc_arena_max",
}

// WindowKeep are the step aggregates a downsampled read keeps: the
// highest value of each step of the gauges that make up the charge, so
// that a step's split is built from its maxima (on the safe side: parts
// peaking at different times are added).
func WindowKeep() map[string]sample.Aggregates {
	k := map[string]sample.Aggregates{}
	for _, n := range WindowSeries {
		if !strings.HasSuffix(n, "_total") && !strings.HasSuffix(n, "_info") {
			k[n] = sample.KeepMax
		}
	}
	return k
}

// counters of memory.stat read as counters (their last value in a step).
var statCounters = map[string]bool{"workingset_refault_file": true, "workingset_refault_anon": true, "pgmajfault": true,
	"workingset_activate_anon": true, "workingset_activate_file": true, "workingset_restore_anon": true, "workingset_restore_file": true}

// FromWindow reads the containers of a recording's window: every cgroup
// with its memory recorded, or only those at or below under when it is
// not "". Each step's split is model.OOMMemoryFrom of the cgroup's series
// at that time.
func FromWindow(w *sample.Window, under string) []*Container {
	type cg struct {
		snaps map[int64]*sample.Snapshot
		times []int64
	}
	in := func(p string) bool {
		return under == "" || under == "/" || p == under || strings.HasPrefix(p, strings.TrimSuffix(under, "/")+"/")
	}
	cgs := map[string]*cg{}
	for _, s := range w.Select("memdoctor_cgroup_memory_usage_bytes") {
		p := s.Labels.Get("cgroup")
		if !in(p) {
			continue
		}
		c := &cg{snaps: map[int64]*sample.Snapshot{}}
		for _, pt := range s.Points {
			c.snaps[pt.T] = &sample.Snapshot{Time: time.UnixMilli(pt.T)}
			c.times = append(c.times, pt.T)
		}
		cgs[p] = c
	}
	value := func(s *sample.Series, i int) float64 {
		counter := strings.HasSuffix(s.Name, "_total") || s.Name == "memdoctor_cgroup_memory_stat" && statCounters[s.Labels.Get("stat")]
		if s.Max != nil && !counter {
			return s.Max[i]
		}
		return s.Points[i].V
	}
	for _, name := range WindowSeries[:9] {
		for _, s := range w.Select(name) {
			c := cgs[s.Labels.Get("cgroup")]
			if c == nil {
				continue
			}
			for i, pt := range s.Points {
				if snap := c.snaps[pt.T]; snap != nil {
					snap.AddMetric(sample.Metric{Name: s.Name, Labels: s.Labels, Value: value(s, i)})
				}
			}
		}
	}
	// Processes to cgroups, then runtimes and arenas to cgroups.
	pidCg := map[string]string{}
	for _, s := range w.Select("memdoctor_process_cgroup_info") {
		if p := s.Labels.Get("cgroup"); cgs[p] != nil {
			pidCg[s.Labels.Get("pid")] = p
		}
	}
	type rtKey struct{ cg, pid string }
	rts := map[rtKey]*Runtime{}
	heapUsed := map[string]map[int64]float64{} // cgroup → time → in-use heap of its JVMs
	for _, s := range w.Select("memdoctor_runtime_info") {
		pid := s.Labels.Get("pid")
		p, ok := pidCg[pid]
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(pid)
		rts[rtKey{p, pid}] = &Runtime{Kind: s.Labels.Get("runtime"), PID: n, Comm: s.Labels.Get("comm")}
	}
	for _, s := range w.Select("memdoctor_runtime_heap_limit_bytes") {
		if rt := rts[rtKey{pidCg[s.Labels.Get("pid")], s.Labels.Get("pid")}]; rt != nil {
			for i := range s.Points {
				rt.HeapLimitBytes = max(rt.HeapLimitBytes, int64(value(s, i)))
			}
		}
	}
	for _, s := range w.Select("memdoctor_runtime_heap_committed_bytes") {
		if rt := rts[rtKey{pidCg[s.Labels.Get("pid")], s.Labels.Get("pid")}]; rt != nil {
			for i := range s.Points {
				rt.HeapCommittedMaxBytes = max(rt.HeapCommittedMaxBytes, int64(value(s, i)))
			}
		}
	}
	for _, s := range w.Select("memdoctor_runtime_heap_live_bytes", "runtime", "jvm") {
		p := pidCg[s.Labels.Get("pid")]
		if p == "" {
			continue
		}
		if heapUsed[p] == nil {
			heapUsed[p] = map[int64]float64{}
		}
		for _, pt := range s.Points {
			heapUsed[p][pt.T] += pt.V // the last value of a step: the heap in use then, not its peak
		}
	}
	arenas := map[string][]Arenas{}
	arenaMax := map[string]int{}
	for _, s := range w.Select("memdoctor_process_malloc_arena_max") {
		if pt, ok := s.Last(); ok {
			arenaMax[s.Labels.Get("pid")] = int(pt.V)
		}
	}
	for _, s := range w.Select("memdoctor_process_malloc_arenas") {
		pid := s.Labels.Get("pid")
		p := pidCg[pid]
		if p == "" {
			continue
		}
		n, _ := strconv.Atoi(pid)
		a := Arenas{PID: n, Comm: s.Labels.Get("comm"), ArenaMax: arenaMax[pid]}
		for i := range s.Points {
			a.Arenas = max(a.Arenas, int(value(s, i)))
		}
		arenas[p] = append(arenas[p], a)
	}
	owners := map[string]sample.Labels{}
	for _, s := range w.Select("memdoctor_cgroup_owner_info") {
		owners[s.Labels.Get("cgroup")] = s.Labels
	}
	var out []*Container
	for p, c := range cgs {
		ct := &Container{Name: p, Cgroup: p, OOMKills: 0, Restarts: -1}
		if l, ok := owners[p]; ok {
			ct.Namespace, ct.Pod, ct.Container = l.Get("namespace"), l.Get("pod"), l.Get("container")
			switch {
			case ct.Pod != "" && ct.Container != "":
				ct.Name = ct.Namespace + "/" + ct.Pod + "/" + ct.Container
			case l.Get("unit") != "":
				ct.Name = l.Get("unit")
			}
		}
		sort.Slice(c.times, func(i, j int) bool { return c.times[i] < c.times[j] })
		for _, t := range c.times {
			snap := c.snaps[t]
			m, ok := model.OOMMemoryFrom(snap, p)
			if !ok {
				continue
			}
			st := Step{T: snap.Time, M: m, MappedBytes: math.NaN(), RefaultPages: math.NaN(), PressureSeconds: math.NaN(), HeapUsedBytes: math.NaN()}
			if v, ok := snap.Get("memdoctor_cgroup_memory_stat", "cgroup", p, "stat", "file_mapped"); ok {
				st.MappedBytes = v
			}
			if v, ok := snap.Get("memdoctor_cgroup_memory_stat", "cgroup", p, "stat", "workingset_refault_file"); ok {
				st.RefaultPages = v
			}
			if v, ok := snap.Get("memdoctor_cgroup_memory_pressure_seconds_total", "cgroup", p, "kind", "some"); ok {
				st.PressureSeconds = v
			}
			if h, ok := heapUsed[p][t]; ok {
				st.HeapUsedBytes = h
			}
			ct.Steps = append(ct.Steps, st)
			if m.LimitBytes != nil {
				ct.LimitBytes = *m.LimitBytes
			}
		}
		var kills []sample.Point
		for _, s := range w.Select("memdoctor_cgroup_memory_events_total", "cgroup", p, "event", "oom_kill") {
			kills = append(kills, s.Points...)
		}
		ct.OOMKills = model.Increase(kills)
		for k, rt := range rts {
			if k.cg == p {
				ct.Runtimes = append(ct.Runtimes, *rt)
			}
		}
		sort.Slice(ct.Runtimes, func(i, j int) bool { return ct.Runtimes[i].PID < ct.Runtimes[j].PID })
		ct.Arenas = arenas[p]
		out = append(out, ct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
