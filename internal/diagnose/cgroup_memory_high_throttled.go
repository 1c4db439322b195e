package diagnose

// cgroup_memory_high_throttled: a cgroup v2 workload held back by its
// memory.high.
//
// Mechanism: memory.high is a soft limit: past it the kernel does not kill,
// it reclaims from the cgroup on every charge and, when reclaim cannot
// bring usage back under, puts the allocating task to sleep before it
// returns to user space (mem_cgroup_handle_over_high, up to 2 s at a time).
// Each breach counts in memory.events' "high" (memory.events.local: this
// cgroup's own limit), and the sleep and the reclaim count as memory stall
// in the cgroup's memory.pressure. systemd's MemoryHigh=, the kubelet's
// MemoryQoS (memory.high at a share of the limit) and podman --memory-
// reservation set it.
//
// Method: on a time range (diagnose of a recording or Prometheus), the
// cgroup's own high events rose between the first and the last reading of
// the newest boot and its tasks stalled the rule's share of that time; on
// a snapshot (check), the cgroup has breached memory.high since it was made
// and its tasks stalled that share of the last 10 s (memory.pressure avg10).
//
// Thresholds: the "some" stall at 10 % (warning; a tenth of the time
// asleep or reclaiming is latency a service notices), at 40 % critical
// (the workload runs at a fraction of its speed). Breaches without a stall
// (reclaim took page cache back in time) are how memory.high is meant to
// work and stay quiet.
//
// Known false positives: memory.high set on purpose to slow a batch job
// down; on a snapshot, breaches long ago and a stall now for another
// reason (the host's reclaim): the range form tells those apart.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

type cgroupMemoryHighThrottled struct{}

func init() { register(cgroupMemoryHighThrottled{}) }

// Stall shares ("some"), in percent, from which the breaches throttle the
// workload (warning) and badly (critical).
const (
	cgroupHighStallPct     = 10
	cgroupHighStallCritPct = 40
	// cgroupHighRaise is the suggested memory.high over the current: a
	// quarter more.
	cgroupHighRaise = 1.25
	// cgroupHighMaxFindings bounds the findings: the most stalled first.
	cgroupHighMaxFindings = 10
)

func (cgroupMemoryHighThrottled) Meta() Meta {
	return Meta{ID: "cgroup_memory_high_throttled", Title: "a workload throttled by its cgroup's memory.high",
		Needs: []Need{{"memdoctor_cgroup_memory_pressure_seconds_total", "memdoctor check or record on cgroup v2 with PSI (memory cgroups' memory.pressure)"}},
		Reads: []string{"memdoctor_cgroup_memory_high_bytes", "memdoctor_cgroup_memory_events_total", "memdoctor_cgroup_memory_events_local_total",
			"memdoctor_cgroup_memory_pressure_avg10_percent", "memdoctor_cgroup_memory_pressure_avg60_percent",
			"memdoctor_cgroup_memory_usage_bytes", "memdoctor_cgroup_memory_limit_bytes", "memdoctor_cgroup_memory_anon_bytes",
			"memdoctor_cgroup_memory_file_bytes", "memdoctor_cgroup_owner_info"},
		EndsOnly:  []string{"memdoctor_cgroup_memory_events_total", "memdoctor_cgroup_memory_events_local_total"},
		Charts:    []string{ChartCgroupMemory, ChartMemoryCategories},
		Prefilter: &Prefilter{About: "memory.high breaches within the range with the cgroup's stall share", Queries: cgroupHighQueries, Score: cgroupHighScore},
		Alerts:    cgroupHighAlerts,
		Doc: fmt.Sprintf("a cgroup v2 workload over its memory.high: its breaches (memory.events high) rose and its tasks stalled %d %% of the time or more in reclaim and throttling (its memory.pressure; critical at %d %%); with the commands to raise memory.high where it is set, or to make the workload smaller",
			cgroupHighStallPct, cgroupHighStallCritPct)}
}

func (cgroupMemoryHighThrottled) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	s := in.Host.S
	var hit []cgStall
	for _, c := range cgroupStalls(in) {
		if c.path == "/" || c.highEvents <= 0 || !cgroupHighSet(s, c.path) {
			continue
		}
		if c.inRange && c.some >= cgroupHighStallPct || !c.inRange && c.someAvg10 >= cgroupHighStallPct {
			hit = append(hit, c)
		}
	}
	stall := func(c cgStall) float64 {
		if c.inRange {
			return c.some
		}
		return c.someAvg10
	}
	sort.SliceStable(hit, func(i, j int) bool { return stall(hit[i]) > stall(hit[j]) })
	if len(hit) > cgroupHighMaxFindings {
		hit = hit[:cgroupHighMaxFindings]
	}
	var out []model.Finding
	for _, c := range hit {
		high := s.Value("memdoctor_cgroup_memory_high_bytes", "cgroup", c.path)
		usage := s.Value("memdoctor_cgroup_memory_usage_bytes", "cgroup", c.path)
		anon := s.Value("memdoctor_cgroup_memory_anon_bytes", "cgroup", c.path)
		file := s.Value("memdoctor_cgroup_memory_file_bytes", "cgroup", c.path)
		sev := model.Warning
		if stall(c) >= cgroupHighStallCritPct {
			sev = model.Critical
		}
		f := model.Finding{ID: "cgroup_memory_high_throttled", Severity: sev, Subject: "cgroup " + c.path,
			Evidence: []model.Evidence{evText("cgroup", c.path), evText("owner", cgroupOwner(s, c.path)),
				ev("memory_high_bytes", high, "bytes"), ev("usage_bytes", usage, "bytes"),
				ev("anon_bytes", anon, "bytes"), ev("file_bytes", file, "bytes")}}
		var when string
		if c.inRange {
			when = fmt.Sprintf("%s over memory.high in %s between two readings, its tasks stalled %.0f%% of that time",
				plural(c.highEvents, "breach", "breaches"), format.Duration(time.Duration(c.seconds*float64(time.Second))), c.some)
			f.Evidence = append(f.Evidence, ev("high_events_in_range", c.highEvents, "count"), ev("some_stall_percent", c.some, "percent"),
				ev("some_stall_seconds", c.someStalled, "seconds"), ev("interval_seconds", c.seconds, "seconds"))
		} else {
			when = fmt.Sprintf("%s over memory.high since the cgroup was made, its tasks stalled %.0f%% of the last 10 s (%.0f%% of the last minute)",
				plural(c.highEvents, "breach", "breaches"), c.someAvg10, c.some)
			f.Evidence = append(f.Evidence, ev("high_events_since_created", c.highEvents, "count"), ev("some_avg10_percent", c.someAvg10, "percent"),
				ev("some_avg60_percent", c.some, "percent"))
		}
		f.Summary = fmt.Sprintf("%s: usage %s against memory.high %s (anon %s, page cache %s); the kernel reclaims from it and puts its allocating tasks to sleep: it runs slower, it is not killed",
			when, format.Bytes(int64(usage)), format.Bytes(int64(high)), format.Bytes(int64(anon)), format.Bytes(int64(file)))
		f.Summary = model.NamedSummary(s, c.path, f.Summary)
		f.Remedies = cgroupHighRemedies(s, c.path, high)
		out = append(out, f)
	}
	return out
}

// cgroupHighRemedies: what fills the cgroup, then memory.high raised where
// it is set (the unit, the pod, the file), or the workload made smaller.
func cgroupHighRemedies(s *sample.Snapshot, p string, high float64) []model.Remedy {
	dir := "/sys/fs/cgroup" + p
	rs := []model.Remedy{{Title: "see what is over memory.high: anonymous memory (the processes' own) or page cache, and the breaches and stall",
		Commands: []string{"cat " + cgFiles(dir, "memory.high", "memory.current", "memory.events.local", "memory.pressure"),
			"grep -E '^(anon|file|inactive_file|active_file) ' " + cgFiles(dir, "memory.stat"),
			fmt.Sprintf("ps -o pid,rss,comm -p $(cat %s | paste -sd,)", cgFiles(dir, "cgroup.procs"))},
		Risk: "none (read-only)"}}
	raised := roundUpMiB(high * cgroupHighRaise)
	if maxV, ok := s.Get("memdoctor_cgroup_memory_limit_bytes", "cgroup", p); ok && raised > maxV {
		raised = maxV // past memory.max it would never apply
	}
	unit := p[strings.LastIndex(p, "/")+1:]
	r := model.Remedy{Title: fmt.Sprintf("if the workload needs more, raise memory.high where it is set (%s to %s here)", format.Bytes(int64(high)), format.Bytes(int64(raised))),
		Risk: "the cgroup may then take that much more from the rest of the host; memory.max still bounds it"}
	switch {
	case strings.Contains(p, "kubepods"):
		r.Commands = []string{"# the kubelet sets memory.high from the container's limit (MemoryQoS: memoryThrottlingFactor × limit): raise the limit",
			"kubectl set resources deployment/<name> -n <namespace> -c <container> --limits=memory=<new limit>"}
	case isUnitName(unit):
		r.Commands = []string{fmt.Sprintf("systemctl show %s -p MemoryHigh -p MemoryMax -p MemoryCurrent", model.ShellArg(unit)),
			fmt.Sprintf("systemctl set-property --runtime %s MemoryHigh=%d   # --runtime: until reboot; drop it to keep the setting", model.ShellArg(unit), int64(raised))}
		r.Undo = fmt.Sprintf("systemctl set-property --runtime %s MemoryHigh=%d", model.ShellArg(unit), int64(high))
	default:
		r.Commands = []string{fmt.Sprintf("echo %d > %s", int64(raised), cgFiles(dir, "memory.high"))}
		r.Undo = fmt.Sprintf("echo %d > %s", int64(high), cgFiles(dir, "memory.high"))
	}
	rs = append(rs, r)
	return append(rs, model.Remedy{Title: "or make the workload fit under memory.high: a smaller heap or cache, fewer workers; a leak shows as anon rising across readings",
		Risk: "none until changed"})
}

// cgroupHighQueries: cgroups whose memory.high breaches rose within the
// range, by their stall share.
func cgroupHighQueries(a PrefilterArgs) []PromQuery {
	share := "100 * rate(" + sel("memdoctor_cgroup_memory_pressure_seconds_total", a.Match, `kind="some"`) + "[" + a.Window() + "])"
	breached := "increase(" + sel("memdoctor_cgroup_memory_events_total", a.Match, `event="high"`) + "[" + a.Window() + "]) > 0"
	return []PromQuery{{"percent", byInstance("("+share+") and on (instance, cgroup) ("+breached+")") + " > " + promNum(cgroupHighStallPct*PrefilterFactor)}}
}

func cgroupHighScore(v PrefilterValues) float64 {
	if !v.Has("percent") {
		return 0
	}
	return v.V("percent") / cgroupHighStallPct
}

func cgroupHighAlerts(o AlertOptions) []Alert {
	share := "100 * rate(" + sel("memdoctor_cgroup_memory_pressure_seconds_total", o.Match, `kind="some"`) + "[5m])"
	breached := "increase(" + sel("memdoctor_cgroup_memory_events_total", o.Match, `event="high"`) + "[5m]) > 0"
	return []Alert{{Name: "MemdoctorCgroupMemoryHighThrottled", Expr: "(" + share + " > " + promNum(cgroupHighStallPct) + ") and on (instance, cgroup) (" + breached + ")",
		For: "5m", Severity: "warning",
		Summary: "cgroup {{ $labels.cgroup }} on {{ $labels.instance }}: over memory.high and stalled over " + promNum(cgroupHighStallPct) + "% of the time"}}
}
