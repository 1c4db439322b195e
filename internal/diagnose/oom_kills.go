package diagnose

// oom_kills: the kernel killed a process for want of memory.
//
// Mechanism: when an allocation cannot be satisfied after reclaim — the
// whole host out of memory, or a memory cgroup at its limit (memory.max on
// cgroup v2, memory.limit_in_bytes on v1) — the OOM killer picks a task and
// kills it. /proc/vmstat's oom_kill (4.13+) counts every such kill, host-wide
// and cgroup-limited alike. A kill is never "ok": some work was lost, and the
// kernel log names the victim and which limit was hit (constraint=
// CONSTRAINT_MEMCG with oom_memcg=, or CONSTRAINT_NONE for the whole host).
//
// Method: on a snapshot (check), the counter since boot, and on the live
// host the kernel log's newest reports (/dev/kmsg): victim, RSS, cgroup and
// limit, and when by the log's clock; on a time range
// (diagnose, report, a recording), the counter's increase within the
// range, counted through reboots, and when it rose (first and last kill,
// to the resolution of the samples). Kills before the range are not the
// range's: a recording judges only what happened while it ran.
//
// Fires (warning) on any kill.
//
// Known false positives: none: a kill happened. A kill deliberately provoked
// (a test of a cgroup limit) is still a kill.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type oomKills struct{}

func init() { register(oomKills{}) }

func (oomKills) Meta() Meta {
	return Meta{ID: "oom_kills", Title: "processes killed by the OOM killer",
		Needs:     []Need{{"node_vmstat_oom_kill", "/proc/vmstat's oom_kill (kernel 4.13+)"}},
		Reads:     []string{"node_boot_time_seconds", "memdoctor_kmsg_oom_kill_seconds", "memdoctor_kmsg_oom_kill_bytes"},
		Charts:    []string{ChartMemoryCategories},
		Prefilter: &Prefilter{About: "OOM kills within the range", Queries: oomQueries, Score: oomScore},
		Doc:       "the OOM killer killed a process: since boot (check, with the kernel log's newest reports on the live host: victim, RSS, cgroup and limit) or within the range (diagnose), with when, and the killed cgroup's limit in the host's layout"}
}

func (oomKills) Eval(in *Input) []model.Finding {
	if in.Window != nil && in.Window.Has("node_vmstat_oom_kill") {
		return oomInWindow(in)
	}
	if in.Host == nil {
		return nil
	}
	n, ok := in.Host.S.Get("node_vmstat_oom_kill")
	if !ok || n <= 0 {
		return nil
	}
	h := in.Host
	since := "since boot"
	f := model.Finding{ID: "oom_kills", Severity: model.Warning, Subject: "host",
		Evidence: []model.Evidence{ev("oom_kills_since_boot", n, "count")}}
	if up := h.Info.UptimeSeconds; up > 0 {
		boot := h.Info.Time.Add(-time.Duration(up * float64(time.Second)))
		since = fmt.Sprintf("since boot (%s ago, %s)", format.Duration(time.Duration(up*float64(time.Second))), boot.UTC().Format("2006-01-02 15:04 UTC"))
		f.Evidence = append(f.Evidence, ev("uptime_seconds", up, "seconds"))
		if days := up / 86400; days >= 1 {
			f.Evidence = append(f.Evidence, ev("oom_kills_per_day", n/days, "per_day"))
		}
	}
	f.Summary = fmt.Sprintf("the OOM killer killed %s %s: work was lost; the kernel log says which process and which limit (a memory cgroup's or the whole host's)",
		plural(n, "process", "processes"), since)
	if said := kmsgOOMReports(h, &f); said != "" {
		f.Summary += "; the kernel log's latest: " + said
	}
	f.Remedies = oomRemedies(h, h.Info.Source == "live", time.Time{}, time.Time{})
	return []model.Finding{f}
}

// kmsgOOMReports adds the kernel log's newest OOM-kill reports (live check)
// to the finding's evidence, newest first, and says the newest three.
func kmsgOOMReports(h *model.Host, f *model.Finding) string {
	ms := h.S.Select("memdoctor_kmsg_oom_kill_seconds")
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Value > ms[j].Value })
	boot, hasBoot := h.S.Get("node_boot_time_seconds")
	var said []string
	for i, m := range ms {
		l := m.Labels
		key := []string{"boot_usec", l.Get("boot_usec"), "pid", l.Get("pid")}
		size := func(kind string) float64 {
			v, ok := h.S.Get("memdoctor_kmsg_oom_kill_bytes", append(key, "kind", kind)...)
			if !ok {
				return -1
			}
			return v
		}
		n := strconv.Itoa(i + 1)
		victim := fmt.Sprintf("%s (pid %s)", l.Get("task"), l.Get("pid"))
		f.Evidence = append(f.Evidence, evText("kmsg_kill_"+n+"_victim", victim),
			ev("kmsg_kill_"+n+"_seconds_after_boot", m.Value, "seconds"))
		text := victim
		if rss := size("rss"); rss >= 0 {
			f.Evidence = append(f.Evidence, ev("kmsg_kill_"+n+"_rss_bytes", rss, "bytes"))
			text += ", RSS " + format.Bytes(int64(rss))
			if anon := size("anon_rss"); anon >= 0 {
				f.Evidence = append(f.Evidence, ev("kmsg_kill_"+n+"_anon_rss_bytes", anon, "bytes"))
				text += " (anon " + format.Bytes(int64(anon)) + ")"
			}
		}
		if cg := l.Get("oom_memcg"); cg != "" {
			f.Evidence = append(f.Evidence, evText("kmsg_kill_"+n+"_cgroup", cg))
			text += ", cgroup " + cg
			if lim := size("limit"); lim >= 0 {
				f.Evidence = append(f.Evidence, ev("kmsg_kill_"+n+"_cgroup_limit_bytes", lim, "bytes"))
				text += " at its limit " + format.Bytes(int64(lim))
			}
		} else {
			text += ", the whole host (" + l.Get("constraint") + ")"
		}
		// The log's clock (the scheduler's) stops in suspend and can lag
		// the wall clock in a VM: the date is approximate.
		text += fmt.Sprintf(", logged %s after boot", format.Duration(time.Duration(m.Value*float64(time.Second))))
		if hasBoot && boot > 0 {
			at := time.Unix(0, int64((boot+m.Value)*1e9)).UTC()
			f.Evidence = append(f.Evidence, evText("kmsg_kill_"+n+"_at", at.Format(time.RFC3339)))
			text += " (about " + at.Format("2006-01-02 15:04 UTC") + ")"
		}
		if i < 3 {
			said = append(said, text)
		}
	}
	return strings.Join(said, "; ")
}

// oomInWindow judges the counter's increase within the range.
func oomInWindow(in *Input) []model.Finding {
	w := in.Window
	var inc float64
	var first, last int64
	for _, sp := range model.Segments(w) {
		ps := model.Within(w.Get("node_vmstat_oom_kill"), sp)
		for i := 1; i < len(ps); i++ {
			d := ps[i].V - ps[i-1].V
			if d < 0 { // a reboot without a boot-time series: restarted from 0
				d = ps[i].V
			}
			if d > 0 {
				inc += d
				if first == 0 {
					first = ps[i-1].T
				}
				last = ps[i].T
			}
		}
	}
	if inc <= 0 {
		return nil
	}
	from, to := time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC()
	when := fmt.Sprintf("between %s and %s", from.Format("2006-01-02 15:04:05"), to.Format("2006-01-02 15:04:05 UTC"))
	f := model.Finding{ID: "oom_kills", Severity: model.Warning, Subject: subject(w, "host"),
		Summary: fmt.Sprintf("the OOM killer killed %s within the range, %s: work was lost; the kernel log of that time says which process and which limit",
			plural(inc, "process", "processes"), when),
		Evidence: []model.Evidence{
			ev("oom_kills_in_range", inc, "count"),
			evText("first_kill_after", from.Format(time.RFC3339)),
			evText("last_kill_by", to.Format(time.RFC3339)),
		},
	}
	f.Remedies = oomRemedies(in.Host, false, from, to)
	return []model.Finding{f}
}

// oomRemedies fit the data: the kernel log of the kills' time (a range
// names it; a live check reads this boot's), and the limits of the host's
// own cgroup layout.
func oomRemedies(h *model.Host, live bool, from, to time.Time) []model.Remedy {
	logCmd := "journalctl -k -b | grep -E 'oom-kill:|Killed process|Memory cgroup out of memory'"
	title := "find what was killed and which limit was hit: the kernel log names the victim, constraint=CONSTRAINT_MEMCG with oom_memcg= (a cgroup's limit) or CONSTRAINT_NONE (the whole host)"
	if !from.IsZero() {
		logCmd = fmt.Sprintf("journalctl -k --since '%s' --until '%s' | grep -E 'oom-kill:|Killed process|Memory cgroup out of memory'",
			from.Add(-time.Minute).Format("2006-01-02 15:04:05 UTC"), to.Add(time.Minute).Format("2006-01-02 15:04:05 UTC"))
	}
	cmds := []string{logCmd, "dmesg -T | grep -E 'oom-kill:|Killed process'   # without a journal (this boot only)"}
	if !live && from.IsZero() {
		title += " (on the host the data came from)"
	}
	rs := []model.Remedy{{Title: title, Commands: cmds, Risk: "none (read-only)"}}
	hier, kernel := "", ""
	if h != nil {
		hier, kernel = h.Cgroups.MemoryHierarchy, h.Info.Kernel
	}
	rs = append(rs, oomCgroupRemedies(hier, kernel)...)
	rs = append(rs, model.Remedy{Title: "if the whole host ran out (CONSTRAINT_NONE): see what holds the memory now (FINDINGS, MEMORY, PROCESSES) and add memory or move work off the host",
		Risk: "capacity or placement changes"})
	return rs
}

// oomCgroupRemedies read a killed cgroup's limit in the host's own layout:
// v1's memory.limit_in_bytes, or v2's memory.max (memory.peak only from
// 5.19 on). Without a known layout, both are given, each named.
func oomCgroupRemedies(hier, kernel string) []model.Remedy {
	memcg := "CG=$( (dmesg; journalctl -k -b) 2>/dev/null | grep -o 'oom_memcg=[^,]*' | tail -1 | cut -d= -f2)   # the last kill's cgroup"
	risk := "none to read; a higher limit lets that cgroup take memory from the rest of the host"
	// $CG is the kernel's text, expanded only inside double quotes: no
	// word splitting or globbing on a name with spaces or * in it.
	v1 := `cat "/sys/fs/cgroup/memory$CG/memory.limit_in_bytes" "/sys/fs/cgroup/memory$CG/memory.max_usage_in_bytes" "/sys/fs/cgroup/memory$CG/memory.failcnt"`
	v2 := `cat "/sys/fs/cgroup$CG/memory.max" "/sys/fs/cgroup$CG/memory.events"`
	if kernel == "" || model.KernelAtLeast(kernel, 5, 19) {
		v2 = `cat "/sys/fs/cgroup$CG/memory.max" "/sys/fs/cgroup$CG/memory.peak" "/sys/fs/cgroup$CG/memory.events"`
	}
	title := "if a memory cgroup's limit was hit (CONSTRAINT_MEMCG): compare its limit with its peak and its failures, then raise the limit or lower the workload's use"
	switch hier {
	case "v1":
		return []model.Remedy{{Title: title, Commands: []string{memcg, v1}, Risk: risk}}
	case "v2":
		return []model.Remedy{{Title: title, Commands: []string{memcg, v2}, Risk: risk}}
	case "none":
		return nil
	}
	return []model.Remedy{{Title: title + " (the data does not say the cgroup layout: v1 first, then v2)",
		Commands: []string{memcg, v1 + "   # cgroup v1", v2 + "   # cgroup v2"}, Risk: risk}}
}

// oomQueries: kills within the range (any is a finding).
func oomQueries(a PrefilterArgs) []PromQuery {
	return []PromQuery{{"kills", byInstance("increase("+sel("node_vmstat_oom_kill", a.Match)+"["+a.Window()+"])") + " > 0"}}
}

// oomScore: one kill is the threshold.
func oomScore(v PrefilterValues) float64 { return v.V("kills") }
