package diagnose

// cgroup_oom_kills: the OOM killer killed a process in a memory cgroup.
//
// Mechanism: a memory cgroup that reaches its limit (memory.max,
// memory.limit_in_bytes) and cannot reclaim below it invokes the OOM killer
// on its own tasks; the rest of the host may have plenty free. Each kill
// counts in the cgroup's oom_kill event: on v2 in memory.events of the
// cgroup and every ancestor (memory.events.local holds its own), on v1 in
// memory.oom_control of the cgroup whose limit was hit only (4.13+).
//
// Method: per cgroup the collector read (the largest, plus every cgroup
// with OOM kills, up to a bound): on a snapshot (check), the counter since
// the cgroup was made; on a time range, its increase within the range
// (a counter that dropped is a new cgroup of the same path: its value
// counts). On v2 a cgroup's kills are those of its counter minus those of
// its nearest read descendants, so an ancestor tells of kills in children
// removed since (a pod's container restarted with a new cgroup) and no kill
// is told twice; on v1 the counters are each cgroup's own.
//
// On the live host, the kernel log's reports of kills at the cgroup's limit
// (/dev/kmsg, oom_memcg=) name the victims, their RSS and anon RSS. A
// report at the limit of a cgroup that was not read (a container's cgroup
// removed before the sample) is told by its nearest ancestor with a
// finding, so a pod whose killed container is gone still names the victim;
// a report at a cgroup that was read is that cgroup's alone, never told
// twice.
//
// Fires (warning) on any kill.
//
// Known false positives: none: a kill happened. A v1 leaf removed before
// it was read took its count with it: the host-wide oom_kills rule still
// counts that kill.

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

type cgroupOOMKills struct{}

func init() { register(cgroupOOMKills{}) }

// cgroupOOMMaxFindings bounds the findings: the most killed first.
const cgroupOOMMaxFindings = 10

func (cgroupOOMKills) Meta() Meta {
	return Meta{ID: "cgroup_oom_kills", Title: "processes OOM-killed in a memory cgroup",
		Needs: []Need{{"memdoctor_cgroup_memory_events_total", "memdoctor check or record (memory cgroups' memory.events or memory.oom_control)"}},
		Reads: []string{"memdoctor_cgroup_memory_limit_bytes", "memdoctor_cgroup_memory_peak_bytes", "memdoctor_cgroup_memory_usage_bytes",
			"memdoctor_cgroup_owner_info", "node_boot_time_seconds", "memdoctor_kmsg_oom_kill_seconds", "memdoctor_kmsg_oom_kill_bytes"},
		Charts:    []string{ChartCgroupMemory, ChartMemoryCategories},
		Prefilter: &Prefilter{About: "cgroup OOM kills within the range, and containers' (cadvisor's OOM events, kube-state-metrics' OOMKilled restarts)", Queries: cgroupOOMQueries, Score: cgroupOOMScore},
		Alerts:    cgroupOOMAlerts,
		Doc:       "the OOM killer killed a process in a memory cgroup at its limit: since the cgroup was made (check) or within the range (diagnose), per cgroup, with who it belongs to, its limit and peak"}
}

type cgKills struct {
	path  string
	kills float64
}

func (cgroupOOMKills) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	var counts []cgKills
	var from, to time.Time
	inRange := in.Window != nil && in.Window.Has("memdoctor_cgroup_memory_events_total")
	if inRange {
		counts, from, to = cgroupKillsInWindow(in)
	} else {
		for _, m := range in.Host.S.Select("memdoctor_cgroup_memory_events_total", "event", "oom_kill") {
			if m.Value > 0 {
				counts = append(counts, cgKills{m.Labels.Get("cgroup"), m.Value})
			}
		}
	}
	hier := in.Host.Cgroups.MemoryHierarchy
	if hier != "v1" {
		counts = ownKills(counts)
	}
	sort.SliceStable(counts, func(i, j int) bool { return counts[i].kills > counts[j].kills })
	if len(counts) > cgroupOOMMaxFindings {
		counts = counts[:cgroupOOMMaxFindings]
	}
	s := in.Host.S
	read := readCgroups(s)
	var out []model.Finding
	for _, c := range counts {
		if c.kills <= 0 {
			continue
		}
		who := cgroupOwner(s, c.path)
		when := "since the cgroup was made"
		ev0 := ev("oom_kills_since_created", c.kills, "count")
		if inRange {
			when = fmt.Sprintf("between %s and %s", from.Format("2006-01-02 15:04:05"), to.Format("2006-01-02 15:04:05 UTC"))
			ev0 = ev("oom_kills_in_range", c.kills, "count")
		}
		f := model.Finding{ID: "cgroup_oom_kills", Severity: model.Warning, Subject: "cgroup " + c.path,
			Summary: fmt.Sprintf("the OOM killer killed %s in this cgroup %s, at its limit: work was lost; the kernel log names the victim",
				plural(c.kills, "process", "processes"), when),
			Evidence: []model.Evidence{evText("cgroup", c.path), evText("owner", who), ev0}}
		if v, ok := s.Get("memdoctor_cgroup_memory_limit_bytes", "cgroup", c.path); ok {
			f.Evidence = append(f.Evidence, ev("limit_bytes", v, "bytes"))
		}
		if v, ok := s.Get("memdoctor_cgroup_memory_peak_bytes", "cgroup", c.path); ok {
			f.Evidence = append(f.Evidence, ev("peak_bytes", v, "bytes"))
		}
		if v, ok := s.Get("memdoctor_cgroup_memory_usage_bytes", "cgroup", c.path); ok {
			f.Evidence = append(f.Evidence, ev("usage_bytes", v, "bytes"))
		}
		if victims := cgroupKmsgVictims(s, c.path, counts, read); len(victims) > 0 {
			texts := make([]string, len(victims))
			for i, v := range victims {
				texts[i] = v.text
				n := fmt.Sprintf("victim_%d", i+1)
				f.Evidence = append(f.Evidence, evText(n, v.text))
				if v.rss >= 0 {
					f.Evidence = append(f.Evidence, ev(n+"_rss_bytes", v.rss, "bytes"))
				}
				if v.anon >= 0 {
					f.Evidence = append(f.Evidence, ev(n+"_anon_rss_bytes", v.anon, "bytes"))
				}
			}
			f.Summary = strings.Replace(f.Summary, "the kernel log names the victim", "the kernel log names "+strings.Join(texts, "; "), 1)
		}
		f.Summary = model.NamedSummary(s, c.path, f.Summary)
		f.Remedies = cgroupOOMRemedies(s, c.path, hier)
		out = append(out, f)
	}
	return out
}

// kmsgVictim is one kernel report's victim: its text, and its RSS and
// anon RSS in bytes (-1 when the report lacks them).
type kmsgVictim struct {
	text      string
	rss, anon float64
}

// cgroupKmsgVictims: the kernel log's reports (live check) of kills at
// this cgroup's limit, and at the limit of a cgroup below it that was not
// read and has no nearer ancestor among the findings, newest first, at
// most cgroupOOMMaxVictims: the task, its pid, RSS and anon RSS, the
// cgroup whose limit was hit when that is a descendant, and the cgroup it
// ran in when that is another.
func cgroupKmsgVictims(s *sample.Snapshot, p string, findings []cgKills, read map[string]bool) []kmsgVictim {
	var ms []sample.Metric
	for _, m := range s.Select("memdoctor_kmsg_oom_kill_seconds") {
		if mc := m.Labels.Get("oom_memcg"); mc == p || (mc != "" && isBelow(mc, p) && !read[mc] && nearest(findings, mc, p)) {
			ms = append(ms, m)
		}
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Value > ms[j].Value })
	var out []kmsgVictim
	for _, m := range ms {
		if len(out) == cgroupOOMMaxVictims {
			break
		}
		l := m.Labels
		size := func(kind string) float64 {
			if v, ok := s.Get("memdoctor_kmsg_oom_kill_bytes", "boot_usec", l.Get("boot_usec"), "pid", l.Get("pid"), "kind", kind); ok {
				return v
			}
			return -1
		}
		v := kmsgVictim{text: fmt.Sprintf("%s (pid %s)", l.Get("task"), l.Get("pid")), rss: size("rss"), anon: size("anon_rss")}
		if v.rss >= 0 {
			v.text += " with RSS " + format.Bytes(int64(v.rss))
			if v.anon >= 0 {
				v.text += " (anon " + format.Bytes(int64(v.anon)) + ")"
			}
		} else if v.anon >= 0 {
			v.text += " with anon RSS " + format.Bytes(int64(v.anon))
		}
		mc := l.Get("oom_memcg")
		if mc != p {
			v.text += " at the limit of " + mc
		}
		if tc := l.Get("task_memcg"); tc != "" && tc != mc {
			v.text += " in " + tc
		}
		out = append(out, v)
	}
	return out
}

// readCgroups: the cgroups the collector read (any of their accounting).
func readCgroups(s *sample.Snapshot) map[string]bool {
	read := map[string]bool{}
	for _, name := range []string{"memdoctor_cgroup_memory_usage_bytes", "memdoctor_cgroup_memory_events_total"} {
		for _, m := range s.Select(name) {
			read[m.Labels.Get("cgroup")] = true
		}
	}
	return read
}

// cgroupOOMMaxVictims bounds the victims named per cgroup.
const cgroupOOMMaxVictims = 3

// cgroupKillsInWindow: each cgroup's kill counter's increase within the
// range, through reboots and recreated cgroups (a drop restarts from 0).
func cgroupKillsInWindow(in *Input) (out []cgKills, from, to time.Time) {
	w := in.Window
	var first, last int64
	for _, sr := range w.Select("memdoctor_cgroup_memory_events_total", "event", "oom_kill") {
		var inc float64
		for _, sp := range model.Segments(w) {
			ps := model.Within(sr, sp)
			for i := 1; i < len(ps); i++ {
				d := ps[i].V - ps[i-1].V
				if d < 0 {
					d = ps[i].V
				}
				if d > 0 {
					inc += d
					if first == 0 || ps[i-1].T < first {
						first = ps[i-1].T
					}
					last = max(last, ps[i].T)
				}
			}
		}
		if inc > 0 {
			out = append(out, cgKills{sr.Labels.Get("cgroup"), inc})
		}
	}
	return out, time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC()
}

// ownKills turns v2's hierarchical counts into each cgroup's own: its
// count minus those of its nearest descendants in the list (what is left
// happened in it, or in descendants removed or not read).
func ownKills(all []cgKills) []cgKills {
	out := make([]cgKills, 0, len(all))
	for _, c := range all {
		own := c.kills
		for _, d := range all {
			if d.path != c.path && isBelow(d.path, c.path) && nearest(all, d.path, c.path) {
				own -= d.kills
			}
		}
		if own > 0 {
			out = append(out, cgKills{c.path, own})
		}
	}
	return out
}

// nearest says whether no other listed cgroup lies between d and its
// ancestor a.
func nearest(all []cgKills, d, a string) bool {
	for _, m := range all {
		if m.path != d && m.path != a && isBelow(m.path, a) && isBelow(d, m.path) {
			return false
		}
	}
	return true
}

func cgroupOOMRemedies(s *sample.Snapshot, p, hier string) []model.Remedy {
	if ns, pod, ctr, ok := containerName(s, p); ok {
		rs := []model.Remedy{{Title: "see the kill: the container's last state (OOMKilled, exit code 137), its restarts, and the node's kernel log",
			Commands: []string{fmt.Sprintf("kubectl get pod %s -n %s -o jsonpath='{range .status.containerStatuses[?(@.name==\"%s\")]}{.restartCount} {.lastState.terminated.reason} {.lastState.terminated.finishedAt}{\"\\n\"}{end}'",
				kubeName(pod), kubeName(ns), kubeWord(ctr)),
				"journalctl -k | grep -E 'oom-kill:|Killed process'   # on the node"},
			Risk: "none (read-only)"}}
		return append(rs, cgroupLimitRemedies(s, p, hier)...)
	}
	rs := []model.Remedy{{Title: "find the victims: the kernel log names each killed process, its memory and the cgroup whose limit was hit (oom_memcg=)",
		Commands: []string{"journalctl -k -b | grep -E " + oomMemcgPattern(p),
			"dmesg -T | grep -E 'oom-kill:|Killed process'   # without a journal (this boot only)"},
		Risk: "none (read-only)"}}
	return append(rs, cgroupLimitRemedies(s, p, hier)...)
}

// cgroupOOMQueries: cgroup kills within the range (any is a finding);
// containers' kills too: cadvisor's OOM events, or kube-state-metrics'
// restarts of containers whose last termination was OOMKilled, on the host
// of their node.
func cgroupOOMQueries(a PrefilterArgs) []PromQuery {
	const by = "max by (namespace, pod, container) "
	cadvisor := "sum by (node, namespace, pod, container) (increase(" + containerSel(CadvisorOOMEvents, a.Match) + "[" + a.Window() + "])) > 0"
	ksm := podNode("("+by+"(increase("+sel(KSMRestarts, ContainerMatch(a.Match))+"["+a.Window()+"])) > 0) and on (namespace, pod, container) "+
		by+"(last_over_time("+sel(KSMLastTerminated, ContainerMatch(a.Match), `reason="OOMKilled"`)+"["+a.Window()+"]))", a)
	return []PromQuery{{"kills", byInstance("increase("+sel("memdoctor_cgroup_memory_events_total", a.Match, `event="oom_kill"`)+"["+a.Window()+"])") + " > 0"},
		{"container_kills", onHost("("+cadvisor+") or ("+ksm+")", a)}}
}

func cgroupOOMScore(v PrefilterValues) float64 { return max(v.V("kills"), v.V("container_kills")) }

func cgroupOOMAlerts(o AlertOptions) []Alert {
	return []Alert{{Name: "MemdoctorCgroupOOMKill",
		Expr:     "increase(" + sel("memdoctor_cgroup_memory_events_total", o.Match, `event="oom_kill"`) + "[10m]) > 0",
		For:      "0m",
		Severity: "warning",
		Summary:  "the OOM killer killed a process in cgroup {{ $labels.cgroup }} on {{ $labels.instance }}"}}
}

// oomMemcgPattern is the quoted extended regular expression for grep -E
// that finds the kernel log's lines about kills in cgroup p: p is matched
// as a literal (a cgroup's name may hold any character but /); a name that
// cannot be printed gives the lines of every kill.
func oomMemcgPattern(p string) string {
	if !model.Printable(p) {
		return "'oom-kill:|Memory cgroup out of memory|Killed process'"
	}
	return model.ShellQuote("oom-kill:.*oom_memcg=" + regexp.QuoteMeta(p) + "[,/]|Memory cgroup out of memory|Killed process")
}
