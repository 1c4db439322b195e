package diagnose

// cgroup_near_limit: a memory cgroup's working set is close to its limit.
//
// Mechanism: a cgroup at its limit (memory.max on v2, memory.limit_in_bytes
// on v1) reclaims from itself; what reclaim cannot take back — anonymous
// memory without swap, active page cache, kernel memory — stays charged,
// and when nothing more can be reclaimed the kernel's OOM killer kills a
// process in it. memory.high (v2), when lower, is where reclaim and
// throttling start. Usage alone says little: it counts page cache, which
// is reclaimed at the limit without harm. The working set (usage minus
// inactive file pages, what the kubelet and cadvisor compute and evict on)
// is the part that is not cheap to take back.
//
// Method: per cgroup the collector read in full (the largest, plus every
// one within 10% of a limit), on the latest sample: working set against
// the lower of memory.max and memory.high. On a time range, the working
// set's slope over the last 6 hours of the newest boot, when significant,
// says how long until the limit.
//
// Who would be killed: with per-process data (check, and record with its
// top processes), the collector read the processes of each cgroup near
// its limit and of the cgroups below it, and ranked them as the kernel's
// oom_badness does (RSS + swap + page tables, plus oom_score_adj
// thousandths of the memory the cgroup may use; -1000 never chosen); the
// summary and evidence name that process, at the reading judged. Without
// that data (a recording or capture without it, Prometheus) nothing is
// said of who.
//
// Thresholds: warning at 90 % of the limit, critical at 97 %: the share
// the kubelet's default eviction margins and most container alerts use
// (container_memory_working_set_bytes / limit > 0.9); at 97 % a single
// burst is a kill.
//
// Known false positives: active page cache counts in the working set: a
// cgroup that re-reads a file set as large as its limit looks full and is
// not killed (reclaim demotes active pages first); the evidence splits
// anon from file so this shows. A limit set at the workload's own size on
// purpose (a JVM with -Xmx at the limit) runs near it by design.

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

type cgroupNearLimit struct{}

func init() { register(cgroupNearLimit{}) }

// Working set as a share of the limit, in percent, from which the rule
// warns, and from which it is critical.
const (
	cgroupNearWarnPct = 90
	cgroupNearCritPct = 97
	// cgroupNearMaxFindings bounds the findings: the nearest cgroups first.
	cgroupNearMaxFindings = 10
)

func (cgroupNearLimit) Meta() Meta {
	return Meta{ID: "cgroup_near_limit", Title: "a memory cgroup's working set close to its limit",
		Needs: []Need{{"memdoctor_cgroup_memory_working_set_bytes", "memdoctor check or record (memory cgroups' usage and memory.stat)"}},
		Reads: []string{"memdoctor_cgroup_memory_limit_bytes", "memdoctor_cgroup_memory_high_bytes", "memdoctor_cgroup_memory_usage_bytes",
			"memdoctor_cgroup_memory_anon_bytes", "memdoctor_cgroup_memory_file_bytes", "memdoctor_cgroup_memory_stat", "memdoctor_cgroup_owner_info",
			"memdoctor_cgroup_processes", "memdoctor_cgroup_oom_candidate_bytes", "memdoctor_cgroup_oom_candidate_score_adj"},
		Charts:    []string{ChartCgroupMemory, ChartMemoryCategories},
		Prefilter: &Prefilter{About: "the latest working set against the limit, per cgroup and per cadvisor container", Queries: cgroupNearQueries, Score: cgroupNearScore},
		Alerts:    cgroupNearAlerts,
		Doc:       fmt.Sprintf("a memory cgroup's working set (usage minus inactive file, as the kubelet computes it) at %d %% of its limit (memory.max, or memory.high when lower; critical at %d %%): page cache alone does not fire", cgroupNearWarnPct, cgroupNearCritPct)}
}

func (cgroupNearLimit) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	s := in.Host.S
	type near struct {
		path                       string
		ws, limit, usage, inactive float64
		pct                        float64
		limitName                  string
	}
	var all []near
	for _, m := range s.Select("memdoctor_cgroup_memory_working_set_bytes") {
		p := m.Labels.Get("cgroup")
		limit, name := -1.0, "memory.max"
		if in.Host.Cgroups.MemoryHierarchy == "v1" {
			name = "memory.limit_in_bytes"
		}
		if v, ok := s.Get("memdoctor_cgroup_memory_limit_bytes", "cgroup", p); ok && v > 0 {
			limit = v
		}
		if v, ok := s.Get("memdoctor_cgroup_memory_high_bytes", "cgroup", p); ok && v > 0 && (limit < 0 || v < limit) {
			limit, name = v, "memory.high"
		}
		if limit <= 0 {
			continue
		}
		pct := 100 * m.Value / limit
		if pct < cgroupNearWarnPct {
			continue
		}
		all = append(all, near{path: p, ws: m.Value, limit: limit, pct: pct, limitName: name,
			usage:    s.Value("memdoctor_cgroup_memory_usage_bytes", "cgroup", p),
			inactive: s.Value("memdoctor_cgroup_memory_stat", "cgroup", p, "stat", "inactive_file")})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].pct > all[j].pct })
	if len(all) > cgroupNearMaxFindings {
		all = all[:cgroupNearMaxFindings]
	}
	hier := in.Host.Cgroups.MemoryHierarchy
	var out []model.Finding
	for _, n := range all {
		sev := model.Warning
		if n.pct >= cgroupNearCritPct {
			sev = model.Critical
		}
		who := cgroupOwner(s, n.path)
		anon := s.Value("memdoctor_cgroup_memory_anon_bytes", "cgroup", n.path)
		file := s.Value("memdoctor_cgroup_memory_file_bytes", "cgroup", n.path)
		// The subject names the cgroup; the summary carries no ids (hex
		// reads as numbers).
		f := model.Finding{ID: "cgroup_near_limit", Severity: sev, Subject: "cgroup " + n.path,
			Summary: fmt.Sprintf("working set %s is %.0f%% of its %s %s (anon %s, page cache %s of which %s inactive): reclaim cannot take this back cheaply; past the limit the OOM killer kills in it",
				format.Bytes(int64(n.ws)), n.pct, n.limitName, format.Bytes(int64(n.limit)), format.Bytes(int64(anon)), format.Bytes(int64(file)), format.Bytes(int64(n.inactive))),
			Evidence: []model.Evidence{
				evText("cgroup", n.path),
				evText("owner", who),
				ev("working_set_bytes", n.ws, "bytes"),
				ev("limit_bytes", n.limit, "bytes"),
				ev("working_set_percent_of_limit", n.pct, "percent"),
				ev("usage_bytes", n.usage, "bytes"),
				ev("anon_bytes", anon, "bytes"),
				ev("file_bytes", file, "bytes"),
				ev("inactive_file_bytes", n.inactive, "bytes"),
			},
			Remedies: cgroupLimitRemedies(s, n.path, hier),
		}
		if c, ok := oomCandidate(in, n.path); ok {
			f.Summary += ", most likely " + c.text() + c.why()
			f.Evidence = append(f.Evidence, evText("oom_candidate", c.text()), ev("oom_candidate_bytes", c.bytes, "bytes"),
				ev("oom_candidate_score_adj", c.adj, ""), ev("processes", c.procs, "count"))
		}
		if left, perHour, ok := timeToLimit(in, n.path, n.ws, n.limit); ok {
			f.Summary += fmt.Sprintf("; growing %s an hour, it reaches the limit in about %s", format.Bytes(int64(perHour)), format.Duration(left))
			f.Evidence = append(f.Evidence, ev("working_set_growth_bytes_per_hour", perHour, "bytes"),
				ev("time_to_limit_seconds", left.Seconds(), "seconds"))
		}
		f.Summary = model.NamedSummary(s, n.path, f.Summary)
		out = append(out, f)
	}
	return out
}

// oomCand is the process the collector found the OOM killer would most
// likely kill in a cgroup: its name and pid, RSS + swap + page tables,
// oom_score_adj, and how many processes the cgroup and those below it hold.
type oomCand struct {
	comm, pid         string
	bytes, adj, procs float64
}

func (c oomCand) text() string { return c.comm + " (pid " + c.pid + ")" }

// why: the largest, or the one oom_score_adj makes the choice.
func (c oomCand) why() string {
	size := ": " + format.Bytes(int64(c.bytes)) + " of RSS, swap and page tables"
	switch {
	case c.adj != 0:
		return fmt.Sprintf("%s with oom_score_adj %.0f, among its %s", size, c.adj, plural(c.procs, "process", "processes"))
	case c.procs == 1:
		return size + ", its only process"
	}
	return fmt.Sprintf("%s, the largest of its %.0f processes", size, c.procs)
}

// oomCandidate is the collector's candidate for cgroup p at the reading
// judged; ok is false when none was read then (no per-process data, a
// process list that could not be read whole, or, on a time range, a
// candidate of an earlier reading only).
func oomCandidate(in *Input, p string) (c oomCand, ok bool) {
	const name = "memdoctor_cgroup_oom_candidate_bytes"
	s := in.Host.S
	ms := s.Select(name, "cgroup", p)
	if in.Window != nil && len(ms) > 0 {
		at := int64(math.MinInt64)
		if ws := in.Window.Get("memdoctor_cgroup_memory_working_set_bytes", "cgroup", p); ws != nil {
			if pt, ok := ws.Last(); ok {
				at = pt.T
			}
		}
		var now []sample.Metric
		for _, m := range ms {
			for _, sr := range in.Window.Select(name, "cgroup", p, "pid", m.Labels.Get("pid"), "comm", m.Labels.Get("comm")) {
				if pt, ok := sr.Last(); ok && pt.T >= at {
					now = append(now, m)
					break
				}
			}
		}
		ms = now
	}
	if len(ms) != 1 {
		return c, false
	}
	l := ms[0].Labels
	procs, ok := s.Get("memdoctor_cgroup_processes", "cgroup", p)
	if !ok || procs < 1 {
		return c, false
	}
	return oomCand{comm: l.Get("comm"), pid: l.Get("pid"), bytes: ms[0].Value, procs: procs,
		adj: s.Value("memdoctor_cgroup_oom_candidate_score_adj", "cgroup", p, "pid", l.Get("pid"), "comm", l.Get("comm"))}, true
}

// cgroupSlopeSpan is how far back the working set's slope is fitted: the
// last hours say where it is heading now, not last week's growth.
const cgroupSlopeSpan = 6 * time.Hour

// cgroupSlopeP is the Mann–Kendall p-value under which the rise counts as
// a trend (the other trend rules' 1 %).
const cgroupSlopeP = 0.01

// timeToLimit: on a time range, the working set's slope (Theil–Sen, with
// a significant Mann–Kendall trend) over its last hours within the newest
// boot, and the time left to the limit at that slope; ok is false without
// a range, a rising trend or room left.
func timeToLimit(in *Input, p string, ws, limit float64) (left time.Duration, perHour float64, ok bool) {
	if in.Window == nil || ws >= limit {
		return 0, 0, false
	}
	sp := model.LastSegment(in.Window)
	sp.From = max(sp.From, sp.To-cgroupSlopeSpan.Milliseconds())
	ps := model.Within(in.Window.Get("memdoctor_cgroup_memory_working_set_bytes", "cgroup", p), sp)
	f := fitTrend(ps)
	if !f.OK || f.P >= cgroupSlopeP || f.Slope <= 0 {
		return 0, 0, false
	}
	days := (limit - ws) / f.Slope
	return time.Duration(days * 24 * float64(time.Hour)), f.Slope / 24, true
}

// cgroupNearQueries: the latest working set against the limit, the nearest
// cgroup per instance, for the instances near the threshold only; the
// same of cadvisor's containers (its working set is already usage minus
// inactive file), on the host of their node.
func cgroupNearQueries(a PrefilterArgs) []PromQuery {
	ratio := "100 * last_over_time(" + sel("memdoctor_cgroup_memory_working_set_bytes", a.Match) + "[" + a.Latest() + "]) / on (instance, cgroup) last_over_time(" +
		sel("memdoctor_cgroup_memory_limit_bytes", a.Match) + "[" + a.Latest() + "])"
	const by = "max by (node, namespace, pod, container) "
	containers := "100 * " + by + "(last_over_time(" + containerSel(CadvisorWorkingSet, a.Match) + "[" + a.Latest() + "])) / on (node, namespace, pod, container) (" +
		by + "(last_over_time(" + containerSel(CadvisorLimit, a.Match) + "[" + a.Latest() + "])) > 0)"
	limit := " > " + promNum(cgroupNearWarnPct*PrefilterFactor)
	return []PromQuery{{"percent", byInstance(ratio) + limit}, {"container_percent", onHost(containers+limit, a)}}
}

func cgroupNearScore(v PrefilterValues) float64 {
	if !v.Has("percent") && !v.Has("container_percent") {
		return 0
	}
	return max(v.V("percent"), v.V("container_percent")) / cgroupNearWarnPct
}

func cgroupNearAlerts(o AlertOptions) []Alert {
	ratio := "100 * " + sel("memdoctor_cgroup_memory_working_set_bytes", o.Match) + " / on (instance, cgroup) " + sel("memdoctor_cgroup_memory_limit_bytes", o.Match)
	return []Alert{{Name: "MemdoctorCgroupNearLimit", Expr: ratio + " > " + promNum(cgroupNearWarnPct), For: "10m", Severity: "warning",
		Summary: "cgroup {{ $labels.cgroup }} on {{ $labels.instance }}: working set over " + promNum(cgroupNearWarnPct) + "% of its memory limit"}}
}
