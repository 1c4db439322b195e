package diagnose

// dying_cgroups: removed memory cgroups that the kernel cannot free.
//
// Mechanism: rmdir of a memory cgroup only takes it offline. Since 3.19 every
// charged page holds a reference on its cgroup, so page cache and shmem
// written by a short-lived job keep the struct mem_cgroup (and its per-node,
// per-CPU state) allocated until those pages are reclaimed or truncated.
// Before 5.3 each dying cgroup also pinned its own copies of every slab cache
// (fixed by reparenting kmem caches in 5.3 and per-object accounting in 5.9);
// page-cache (LRU) pages are still not reparented on 6.x kernels. A host
// that creates a cgroup per job accumulates them: SUnreclaim and Percpu grow,
// memory.stat reads and reclaim slow down (incident 1: hundreds of thousands
// of memory cgroups, 60 GB of unreclaimable slab on 5.0).
//
// Thresholds: warning from 100 dying memory cgroups when they also outnumber
// the live ones (a healthy host has a few dozen at most, from supervisors
// that run each command in its own cgroup); critical from 10 000.
//
// Over time (a recording, cron-saved files, Prometheus): fires when the
// dying count — or, with /proc/cgroups only, the total memory-cgroup count —
// grows significantly (Mann–Kendall p < 0.01) by at least 50 a day, with
// 95 % confidence (fit.Limit in trend.go), and 100 over the newest boot.
// The evidence adds the growth per day, its correlation with SUnreclaim,
// the unreclaimable bytes each new cgroup costs (Theil–Sen slope of
// SUnreclaim against the count) and so the capacity lost per day. Over
// several days the trend is fitted to the daily minima: a count that drops
// back every day (cache turnover, or 5.3+ reparenting as in incident 1's
// second rack) has no rising floor and stays quiet.
//
// With check --scan-pages (root) the finding also says what pins them: the
// page cache the kernel still charges to removed cgroups (counted to their
// nearest live ancestor, beyond that ancestor's own local counters), and how
// much of it is dirty, mapped or shmem — pages that drop_caches cannot free.
//
// With check --trace (root) it names who created and removed memory cgroups
// during the trace (process name, its systemd unit or cgroup, its parent)
// and at what rate, and (BPF) how many of the cgroups removed during the
// trace are still dying and how long ago the oldest were removed. With
// record --trace the same is read over the recording's window.
//
// Known false positives: a burst of job completions on a host with plenty of
// cache and no memory pressure; the count falls again when the cache turns
// over. A recording (trend) tells the two apart.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/stats"
)

type dyingCgroups struct{}

func init() { register(dyingCgroups{}) }

func (dyingCgroups) Meta() Meta {
	return Meta{ID: "dying_cgroups", Title: "dying memory cgroups pinned by their page cache",
		Needs: []Need{{"node_cgroups_cgroups", "read /proc/cgroups (v1) or run memdoctor's collector for cgroup v2"}},
		Reads: []string{"memdoctor_memcg_dying_cgroups", "memdoctor_memcg_live_cgroups", "node_memory_SUnreclaim_bytes",
			"node_memory_MemTotal_bytes", "node_uname_info", "node_boot_time_seconds",
			"memdoctor_memcg_dying_pinned_bytes", "memdoctor_memcg_dying_pinned_ancestor_bytes", "memdoctor_pagescan_complete",
			"memdoctor_cgroup_trace_seconds", "memdoctor_cgroup_trace_ops", "memdoctor_cgroup_trace_dying", "memdoctor_cgroup_trace_dying_untracked",
			"memdoctor_cgroup_trace_dying_oldest_seconds", "memdoctor_cgroup_trace_dying_age_seconds"},
		StepMin:   []string{"memdoctor_memcg_dying_cgroups", "node_cgroups_cgroups"}, // dailyMinima
		Charts:    []string{ChartSlabVsCgroups},
		Prefilter: &Prefilter{About: "the memory cgroup count's growth per day, fitted and of its daily floor", Queries: dyingQueries, Score: dyingScore},
		Alerts:    dyingAlerts,
		Doc:       "removed memory cgroups kept alive by the pages charged to them; over time, the memory-cgroup count's floor rises; correlation with SUnreclaim, bytes per cgroup, kernel reparenting"}
}

// dyingSeries are the memory cgroup counts: /proc/cgroups' line (live and
// dying together) and memdoctor's own count of the dying.
func dyingSeries(match string) (cg, dying string) {
	return sel("node_cgroups_cgroups", match, `subsys_name="memory"`), sel("memdoctor_memcg_dying_cgroups", match)
}

// dyingQueries: the count's growth per day, fitted over the range and,
// over four days or more, of its daily floor.
func dyingQueries(a PrefilterArgs) []PromQuery {
	cg, dying := dyingSeries(a.Match)
	R := a.Window()
	qs := []PromQuery{{"slope", byInstance("deriv(" + cg + "[" + R + "]) * 86400 or deriv(" + dying + "[" + R + "]) * 86400")}}
	if a.Range >= 4*24*time.Hour {
		qs = append(qs, PromQuery{"floor", byInstance(dailyFloorGrowth(cg) + " or " + dailyFloorGrowth(dying))})
	}
	return qs
}

func dyingScore(v PrefilterValues) float64 {
	return max(v.V("slope"), v.V("floor")) / dyingMinPerDay
}

func dyingAlerts(o AlertOptions) []Alert {
	cg, dying := dyingSeries(o.Match)
	th := promNum(dyingMinPerDay)
	return []Alert{{Name: "MemdoctorDyingCgroupsGrowing", For: "1h", Severity: "warning",
		Expr:    fmt.Sprintf("%s >= %s\nor\n%s >= %s", dailyFloorGrowth(cg), th, dailyFloorGrowth(dying), th),
		Summary: fmt.Sprintf("memory cgroups on {{ $labels.instance }} pile up: their daily floor grows by %s or more a day (removed cgroups stay pinned)", th)}}
}

func (r dyingCgroups) Eval(in *Input) []model.Finding {
	if in.Window != nil {
		if f := r.trend(in); f != nil {
			return []model.Finding{*f}
		}
	}
	h := in.Host
	if h == nil {
		return nil
	}
	c := h.Cgroups
	if c.MemoryDying == nil {
		return nil
	}
	dying := *c.MemoryDying
	var live int64
	if c.MemoryLive != nil {
		live = *c.MemoryLive
	}
	var sev model.Severity
	switch {
	case dying >= 10000:
		sev = model.Critical
	case dying >= 100 && dying > live:
		sev = model.Warning
	default:
		return nil
	}
	k := h.Info.Kernel
	slabPins := k != "" && !model.KernelAtLeast(k, 5, 3)
	f := model.Finding{ID: "dying_cgroups", Severity: sev, Subject: "host",
		Summary: fmt.Sprintf("%d removed memory cgroups are still allocated (%d live): pages charged to them keep them alive", dying, live),
		Evidence: []model.Evidence{
			ev("memory_cgroups_dying", float64(dying), "count"),
			ev("memory_cgroups_live", float64(live), "count"),
			ev("slab_unreclaimable_bytes", float64(h.Slab.UnreclaimableBytes), "bytes"),
			ev("percpu_bytes", float64(h.Accounting.Category("percpu")), "bytes"),
			evText("memory_hierarchy", c.MemoryHierarchy),
		},
	}
	if k != "" {
		f.Evidence = append(f.Evidence, evText("kernel", k))
		if slabPins {
			f.Evidence = append(f.Evidence, evText("kernel_slab_reparenting", "absent before 5.3: every dying cgroup also pins its own slab caches"))
		} else {
			f.Evidence = append(f.Evidence, evText("kernel_slab_reparenting", "present (5.3+): page cache and shmem are what pin them"))
		}
	}
	dyingTrace(in, &f)
	if ev, sum := dyingPins(h.S); len(ev) > 0 {
		f.Evidence = append(f.Evidence, ev...)
		f.Summary += sum
	}
	f.Remedies = dyingRemedies(c.MemoryHierarchy, k, slabPins)
	if c.MemoryHierarchy == "v1" {
		f.Remedies = append(f.Remedies[:2:2], append([]model.Remedy{forceEmptyRemedy(h.S)}, f.Remedies[2:]...)...)
	}
	return []model.Finding{f}
}

// forceEmptyRemedy frees, on cgroup v1, the dying cgroups already there:
// memory.force_empty on the live cgroup above them (298 down to 97 dying in
// 0.07 s on a v1 host). The page scan names that cgroup (the nearest live
// ancestor of the removed cgroups' cache, most first); without it PARENT
// stands for the job runner's cgroup.
func forceEmptyRemedy(s *sample.Snapshot) model.Remedy {
	var parents []sample.Metric
	if s != nil {
		for _, m := range s.Select("memdoctor_memcg_dying_pinned_ancestor_bytes") {
			if m.Value > 0 && m.Labels.Get("cgroup") != "/" {
				parents = append(parents, m)
			}
		}
	}
	sort.SliceStable(parents, func(i, j int) bool { return parents[i].Value > parents[j].Value })
	words := []string{"PARENT"}
	if len(parents) > 0 {
		words = nil
		for i, m := range parents {
			if i == 3 {
				break
			}
			words = append(words, model.ShellPath(m.Labels.Get("cgroup")))
		}
	}
	var cmds []string
	for _, w := range words {
		cmds = append(cmds, "memdoctor reclaim --cgroup "+w+"           # what --apply would write, and where",
			"memdoctor reclaim --cgroup "+w+" --apply   # writes 0 to its memory.force_empty")
	}
	title := "now: free the dying cgroups already there: memory.force_empty on the live cgroup above them reclaims what they still hold"
	if len(parents) == 0 {
		title += " (PARENT: the job runner's cgroup, with no tasks in it or below it)"
	}
	return model.Remedy{Title: title, Commands: cmds,
		Risk: "memory.force_empty reclaims everything charged to that cgroup and below it: the removed cgroups' page cache, and on a cgroup with tasks their live memory too " +
			"(page cache dropped, anonymous memory swapped out), which is why memdoctor reclaim refuses a cgroup with tasks; later readers re-read from disk"}
}

// creatorsNamed is how many creators the summary names.
const creatorsNamed = 3

// dyingCreators reads the cgroup trace (check --trace): who created and
// removed memory cgroups, at what rate, and a clause for the summary.
func dyingCreators(s *sample.Snapshot) ([]model.Evidence, string) {
	if s == nil {
		return nil, ""
	}
	tr := s.Select("memdoctor_cgroup_trace_seconds")
	if len(tr) == 0 || tr[0].Value <= 0 {
		return nil, ""
	}
	secs := tr[0].Value
	type creator struct {
		comm, unit, parent string
		mkdir, rmdir       float64
	}
	var order []string
	by := map[string]*creator{}
	for _, m := range s.Select("memdoctor_cgroup_trace_ops") {
		c := creator{comm: m.Labels.Get("comm"), unit: m.Labels.Get("unit"), parent: m.Labels.Get("parent")}
		k := c.comm + "\x00" + c.unit
		if by[k] == nil {
			by[k] = &c
			order = append(order, k)
		}
		switch m.Labels.Get("op") {
		case "mkdir":
			by[k].mkdir += m.Value
		case "rmdir":
			by[k].rmdir += m.Value
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := by[order[i]], by[order[j]]
		return a.mkdir+a.rmdir > b.mkdir+b.rmdir
	})
	window := format.Number(secs) + " s"
	out := []model.Evidence{ev("trace_seconds", secs, "seconds"), evText("trace_method", tr[0].Labels.Get("method"))}
	if len(order) == 0 {
		out = append(out, evText("creators", "no memory cgroup was created or removed during the "+window+" trace"))
		return out, ""
	}
	var named []string
	for i, k := range order {
		c := by[k]
		who := c.comm
		if c.unit != "" {
			who += " in " + c.unit
		}
		if c.parent != "" {
			who += ", parent " + c.parent
		}
		out = append(out, evText("creator", fmt.Sprintf("%s: %s mkdir/s, %s rmdir/s (%.0f and %.0f in %s)",
			who, format.Number(c.mkdir/secs), format.Number(c.rmdir/secs), c.mkdir, c.rmdir, window)))
		if i < creatorsNamed {
			named = append(named, fmt.Sprintf("%s (%s/s)", c.comm, format.Number(max(c.mkdir, c.rmdir)/secs)))
		}
	}
	return out, fmt.Sprintf("; made and removed by %s in a trace of %s", strings.Join(named, ", "), window)
}

// dyingPins reads the page scan (check --scan-pages): the evidence of what
// pins the dying cgroups and a clause for the summary.
func dyingPins(s *sample.Snapshot) ([]model.Evidence, string) {
	if s == nil {
		return nil, ""
	}
	file, ok := s.Get("memdoctor_memcg_dying_pinned_bytes", "type", "file")
	if !ok {
		return nil, ""
	}
	kinds := []string{"dirty", "mapped", "shmem", "writeback", "anon"}
	out := []model.Evidence{ev("pinned_page_cache_bytes", file, "bytes")}
	var stuck []string
	for _, k := range kinds {
		v := s.Value("memdoctor_memcg_dying_pinned_bytes", "type", k)
		out = append(out, ev("pinned_"+k+"_bytes", v, "bytes"))
		if v > 0 && k != "writeback" && k != "anon" {
			stuck = append(stuck, format.Bytes(int64(v))+" "+k)
		}
	}
	for _, m := range s.Select("memdoctor_memcg_dying_pinned_ancestor_bytes") {
		if m.Value > 0 {
			out = append(out, evText("pinned_under", fmt.Sprintf("%s: %s of page cache from removed cgroups below it", m.Labels.Get("cgroup"), format.Bytes(int64(m.Value)))))
		}
	}
	if v, ok := s.Get("memdoctor_pagescan_complete"); ok && v == 0 {
		out = append(out, evText("page_scan", "stopped at its time limit: the pinned amounts are a lower bound"))
	}
	sum := fmt.Sprintf("; %s of page cache pins them", format.Bytes(int64(file)))
	if len(stuck) > 0 {
		sum += " (" + strings.Join(stuck, ", ") + ": drop_caches cannot free these)"
	}
	return out, sum
}

// dyingRemedies fit the host: the memory controller's hierarchy names the
// files (v1 memory.force_empty, v2 memory.reclaim), and memory.reclaim is
// offered only where the kernel has it (5.19+). A layout the data does not
// say gets both, each named.
func dyingRemedies(hierarchy, kernel string, slabPins bool) []model.Remedy {
	root := "/sys/fs/cgroup"
	if hierarchy == "v1" {
		root = "/sys/fs/cgroup/memory"
	}
	rs := []model.Remedy{
		{Title: "find who creates and removes cgroups (job runner, systemd transient units, container runtime); reuse a fixed set of cgroups instead of one per job",
			Commands: []string{"find " + root + " -mindepth 1 -maxdepth 3 -type d -newermt '-10 minutes' | head"},
			Risk:     "none (read-only)"},
	}
	v1 := "echo 0 > /sys/fs/cgroup/memory/JOB/memory.force_empty && rmdir /sys/fs/cgroup/memory/JOB"
	v2 := "cat /sys/fs/cgroup/JOB/memory.current > /sys/fs/cgroup/JOB/memory.reclaim; rmdir /sys/fs/cgroup/JOB"
	hasReclaim := kernel == "" || model.KernelAtLeast(kernel, 5, 19)
	switch {
	case hierarchy == "v1":
		rs = append(rs, model.Remedy{Title: "before removing a job's cgroup (JOB: its path under the hierarchy), reclaim what it charged so rmdir frees it at once",
			Commands: []string{v1},
			Risk:     "reclaims (writes back and drops) the job's page cache; later readers re-read it from disk"})
	case hierarchy == "v2" && hasReclaim:
		title := "before removing a job's cgroup (JOB: its path under the hierarchy), reclaim what it charged"
		if kernel == "" {
			title += " (memory.reclaim needs kernel 5.19+)"
		}
		rs = append(rs, model.Remedy{Title: title, Commands: []string{v2},
			Risk: "drops the job's page cache; later readers re-read it from disk"})
		now := "now: free the dying cgroups already there: reclaim, through the memory.reclaim of the cgroup above them (the job runner's), what they still hold"
		if kernel == "" {
			now += " (5.19+)"
		}
		rs = append(rs, model.Remedy{Title: now,
			Commands: []string{"memdoctor reclaim           # what --apply would write, and where", "memdoctor reclaim --apply"},
			Risk:     "drops page cache below that cgroup, the live jobs' included in part; later readers re-read it from disk"})
	case hierarchy == "v2":
		// No memory.reclaim before 5.19 and no force_empty in v2: the
		// job's own cache is what it can drop.
	default:
		cmds := []string{v1 + "   # cgroup v1"}
		if hasReclaim {
			cmds = append(cmds, v2+"   # cgroup v2, kernel 5.19+")
		}
		rs = append(rs, model.Remedy{Title: "before removing a job's cgroup (JOB: its path under the hierarchy), reclaim what it charged (the data does not say the cgroup layout: the v1 line, or the v2 one)",
			Commands: cmds,
			Risk:     "reclaims (writes back and drops) the job's page cache; later readers re-read it from disk"})
	}
	rs = append(rs,
		model.Remedy{Title: "have jobs drop the cache of files they will not read again (delete temporary files, or POSIX_FADV_DONTNEED)",
			Risk: "none for other workloads; a change in the job"},
		model.Remedy{Title: "one-off: drop clean page cache host-wide, which frees the dying cgroups it pinned",
			Commands: []string{"sync", "echo 1 > /proc/sys/vm/drop_caches"},
			Risk:     "every workload re-reads its files from disk afterwards (I/O spike, slower requests for minutes); does not help with dirty, mapped or tmpfs pages; the count grows back"})
	if slabPins {
		rs = append(rs, model.Remedy{Title: "upgrade to kernel 5.3 or later, which reparents slab of removed cgroups",
			Risk: "a kernel upgrade; incident 1 measured unreclaimable slab ~2 GB after a week on 5.3 vs +4 GB/week on 5.0"})
	}
	return rs
}

const (
	dyingMinPerDay = 50
	dyingMinGrowth = 100
)

// trend judges the memory-cgroup count over the window.
func (dyingCgroups) trend(in *Input) *model.Finding {
	w := in.Window
	seg := model.LastSegment(w)
	what := "dying memory cgroups"
	cnt := w.Get("memdoctor_memcg_dying_cgroups")
	if cnt == nil {
		cnt = w.Get("node_cgroups_cgroups", "subsys_name", "memory")
		what = "memory cgroups (dying included)"
	}
	ps := model.Within(cnt, seg)
	if len(ps) < declineMinPoints {
		if cnt != nil {
			in.Note("dying_cgroups", fmt.Sprintf("%d samples of the memory-cgroup count since the last boot: too few for a trend", len(ps)), "record longer")
		}
		return nil
	}
	if since, ok := model.BootedAt(w, seg); ok && since < model.WarmUp && len(dailyMinima(cnt, seg)) < 4 {
		// A host that just booted creates the cgroups of its jobs until
		// the first nights free them: judged once daily floors exist.
		in.Note("dying_cgroups", fmt.Sprintf("the host booted %s ago: its memory-cgroup count is judged on daily floors once it has run %v", spanText(ps), model.WarmUp), "wait, or record longer")
		return nil
	}
	// Over several days, judge the daily floor: dying cgroups that are never
	// freed raise even the daily minimum, while a count that is paid back
	// daily (cache turnover, 5.3+) only moves within the day.
	judged := ps
	if floors := dailyMinima(cnt, seg); len(floors) >= 4 {
		judged = floors
	} else if model.PaidBack(ps) {
		// Too few days for floors, but the count falls back: removed
		// cgroups are being freed. Raw points would read a day's rise
		// (or a host filling up after a boot) as a leak.
		in.Note("dying_cgroups", fmt.Sprintf("the memory-cgroup count rises and falls back over %s since the last boot: freed, not leaking so far (four full days give daily floors to judge)", spanText(ps)), "record longer")
		return nil
	}
	f := fitTrend(judged)
	growth := judged[len(judged)-1].V - judged[0].V
	if !f.OK || f.P >= 0.01 || f.Slope < dyingMinPerDay || growth < dyingMinGrowth {
		return nil
	}
	// And as fast as that with confidence, not only on the fitted slope.
	lim, ok := f.Limit()
	if !ok || lim < dyingMinPerDay {
		return nil
	}
	last := ps[len(ps)-1].V
	sev := model.Warning
	if last+30*f.Slope >= 10000 {
		sev = model.Critical
	}
	fd := &model.Finding{ID: "dying_cgroups", Severity: sev, Subject: subject(w, "host"),
		Summary: fmt.Sprintf("%s grow by %.0f a day (p=%s, %+.0f over %s, now %.0f): removed cgroups stay pinned",
			what, f.Slope, format.Number(f.P), growth, spanText(ps), last),
		Evidence: []model.Evidence{
			ev("memory_cgroups_per_day", f.Slope, "per_day"),
			ev("memory_cgroups_per_day_limit", lim, "per_day"),
			ev("mann_kendall_p", f.P, ""),
			ev("memory_cgroups_growth", growth, "count"),
			ev("memory_cgroups_now", last, "count"),
			evText("counted", what),
		},
	}
	su := model.Within(w.Get("node_memory_SUnreclaim_bytes"), seg)
	if a, b := model.Align(ps, su); len(a) >= declineMinPoints {
		a, b = model.ThinPairs(a, b, maxFitPoints) // Theil–Sen is O(n²) in time and memory
		if r, p, ok := stats.Pearson(a, b); ok {
			fd.Evidence = append(fd.Evidence, ev("correlation_with_slab_unreclaimable", r, "ratio"), ev("correlation_p", p, ""))
		}
		if perCg, _, ok := stats.TheilSen(a, b); ok && perCg > 0 {
			fd.Evidence = append(fd.Evidence,
				ev("slab_unreclaimable_bytes_per_cgroup", perCg, "bytes"),
				ev("capacity_lost_bytes_per_day", perCg*f.Slope, "bytes_per_day"))
			fd.Summary += fmt.Sprintf("; each costs %s of unreclaimable slab, %s a day", format.Bytes(int64(perCg)), format.Bytes(int64(perCg*f.Slope)))
		}
	}
	kernel := ""
	if u := w.Get("node_uname_info"); u != nil {
		kernel = u.Labels.Get("release")
	}
	slabPins := kernel != "" && !model.KernelAtLeast(kernel, 5, 3)
	if kernel != "" {
		fd.Evidence = append(fd.Evidence, evText("kernel", kernel))
		if slabPins {
			fd.Evidence = append(fd.Evidence, evText("kernel_slab_reparenting", "absent before 5.3: every dying cgroup also pins its own slab caches"))
		} else {
			fd.Evidence = append(fd.Evidence, evText("kernel_slab_reparenting", "present (5.3+): page cache and shmem are what pin them"))
		}
	}
	hier := "unknown"
	if in.Host != nil {
		hier = in.Host.Cgroups.MemoryHierarchy
	}
	dyingTrace(in, fd)
	fd.Remedies = dyingRemedies(hier, kernel, slabPins)
	return fd
}

// dyingTrace adds what the cgroup trace saw (check --trace, or record
// --trace over the window): who made and removed the cgroups, and how long
// those removed are dying.
func dyingTrace(in *Input, f *model.Finding) {
	tr := traceSource(in, "memdoctor_cgroup_trace_seconds")
	if ev, sum := dyingCreators(tr); len(ev) > 0 {
		f.Evidence = append(f.Evidence, ev...)
		f.Summary += sum
	}
	if ev, sum := dyingAge(tr); len(ev) > 0 {
		f.Evidence = append(f.Evidence, ev...)
		f.Summary += sum
	}
}

// dyingAge reads how long the cgroups removed during the trace have been
// dying (BPF follows each removed memory cgroup to its release).
func dyingAge(s *sample.Snapshot) ([]model.Evidence, string) {
	if s == nil {
		return nil, ""
	}
	n, ok := s.Get("memdoctor_cgroup_trace_dying")
	if !ok {
		return nil, ""
	}
	out := []model.Evidence{ev("removed_in_trace_still_dying", n, "count")}
	if u := s.Value("memdoctor_cgroup_trace_dying_untracked"); u > 0 {
		out = append(out, evText("removed_in_trace_untracked", fmt.Sprintf("%.0f more removed cgroups were not followed (the tracer's table was full): the count is a lower bound", u)))
	}
	oldest, ok := s.Get("memdoctor_cgroup_trace_dying_oldest_seconds")
	if n <= 0 || !ok {
		return out, ""
	}
	out = append(out, ev("oldest_dying_age_seconds", oldest, "seconds"))
	ages := s.Select("memdoctor_cgroup_trace_dying_age_seconds")
	sort.SliceStable(ages, func(i, j int) bool { return ages[i].Value > ages[j].Value })
	for _, m := range ages {
		if p := m.Labels.Get("cgroup"); p != "" {
			out = append(out, evText("dying_cgroup", fmt.Sprintf("%s: removed %s ago, still allocated", p, format.Duration(time.Duration(m.Value*float64(time.Second))))))
		}
	}
	return out, fmt.Sprintf("; %.0f of the cgroups removed during the trace are still dying, the oldest removed %s ago",
		n, format.Duration(time.Duration(oldest*float64(time.Second))))
}

// dailyMinima returns, per UTC day fully inside the span, the lowest value
// (the step minimum when downsampled), stamped at noon of that day.
func dailyMinima(s *sample.Series, sp model.Span) []sample.Point {
	const day = int64(24 * time.Hour / time.Millisecond)
	mins := map[int64]float64{}
	var order []int64
	for i, p := range s.Points {
		if p.T < sp.From || p.T > sp.To {
			continue
		}
		v := p.V
		if s.Min != nil {
			v = s.Min[i]
		}
		d := p.T / day
		if cur, ok := mins[d]; !ok {
			mins[d] = v
			order = append(order, d)
		} else if v < cur {
			mins[d] = v
		}
	}
	var out []sample.Point
	for _, d := range order {
		if d*day < sp.From || (d+1)*day-1 > sp.To {
			continue // partial days would bias the floor
		}
		out = append(out, sample.Point{T: d*day + day/2, V: mins[d]})
	}
	return out
}
