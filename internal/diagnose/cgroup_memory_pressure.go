package diagnose

// cgroup_memory_pressure: a memory cgroup's tasks stall on memory for a
// sustained share of the time.
//
// Mechanism: cgroup v2's memory.pressure (PSI) counts the time a cgroup's
// tasks wait on memory: reclaiming it themselves (at the cgroup's limit, or
// for the host), faulting back pages reclaimed too early (refaults of
// page cache or swapped anon), or sleeping in memory.high throttling.
// "some" is the share of time at least one task waited, "full" the share
// all of them did (no progress at all). The counts are hierarchical: a
// cgroup's stall shows in every ancestor.
//
// Method: on a snapshot (check), the kernel's own averages: avg10 and avg60
// both at the threshold say the stall lasts (a burst of a few seconds lifts
// avg10 only). On a time range (diagnose of a recording or Prometheus), the
// stall counter's increase between the first and the last reading of the
// newest boot over the time between them: the share of that time. An
// ancestor is not told when one of its descendants is (the descendant is
// where it happens), nor a cgroup whose memory.high breaches rose
// (cgroup_memory_high_throttled tells those).
//
// Thresholds: "some" at 10 % (warning): a tenth of the time waiting on
// memory is a latency a service notices (systemd-oomd's default kill
// threshold is 60 % "full" over 30 s; 10 % is where to act before that);
// "full" at 10 % is critical: the whole cgroup stands still a tenth of the
// time.
//
// Known false positives: a batch job that streams more data than fits in
// memory stalls by design and may not care; a cgroup whose only task is
// blocked on one page for a long time (a slow disk) counts as stalled.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

type cgroupMemoryPressure struct{}

func init() { register(cgroupMemoryPressure{}) }

// Stall shares, in percent, from which the rule fires.
const (
	cgroupPressureSomePct = 10
	cgroupPressureFullPct = 10
	// cgroupPressureMinSpan is the shortest time between two readings
	// that says the stall lasts (the kernel's own avg60 on a snapshot).
	cgroupPressureMinSpan = 30 * time.Second
	// cgroupPressureMaxFindings bounds the findings: the most stalled first.
	cgroupPressureMaxFindings = 10
)

func (cgroupMemoryPressure) Meta() Meta {
	return Meta{ID: "cgroup_memory_pressure", Title: "a memory cgroup's tasks stalled on memory",
		Needs: []Need{{"memdoctor_cgroup_memory_pressure_seconds_total", "memdoctor check or record on cgroup v2 with PSI (memory cgroups' memory.pressure)"}},
		Reads: []string{"memdoctor_cgroup_memory_pressure_avg10_percent", "memdoctor_cgroup_memory_pressure_avg60_percent",
			"memdoctor_cgroup_memory_events_total", "memdoctor_cgroup_memory_events_local_total", "memdoctor_cgroup_memory_working_set_bytes",
			"memdoctor_cgroup_memory_limit_bytes", "memdoctor_cgroup_memory_high_bytes", "memdoctor_cgroup_memory_low_bytes",
			"memdoctor_cgroup_memory_stat", "memdoctor_cgroup_owner_info"},
		EndsOnly:  []string{"memdoctor_cgroup_memory_events_total", "memdoctor_cgroup_memory_events_local_total"},
		Charts:    []string{ChartCgroupMemory, ChartReclaimRates},
		Prefilter: &Prefilter{About: "the share of the range a cgroup's tasks stalled on memory (some)", Queries: cgroupPressureQueries, Score: cgroupPressureScore},
		Alerts:    cgroupPressureAlerts,
		Doc: fmt.Sprintf("a memory cgroup's tasks stalled on memory %d %% of the time or more (memory.pressure some; full at %d %% is critical), sustained: avg10 and avg60 on a snapshot, the stall counter between two readings on a range; with what to change (its limit, memory.low protection, the workload)",
			cgroupPressureSomePct, cgroupPressureFullPct)}
}

func (cgroupMemoryPressure) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	s := in.Host.S
	var hit []cgStall
	for _, c := range cgroupStalls(in) {
		if c.path == "/" {
			continue
		}
		if _, ok := c.sustained(); ok {
			hit = append(hit, c)
		}
	}
	hit = deepest(hit)
	sort.SliceStable(hit, func(i, j int) bool { return hit[i].some > hit[j].some })
	hier := in.Host.Cgroups.MemoryHierarchy
	var out []model.Finding
	for _, c := range hit {
		if len(out) == cgroupPressureMaxFindings {
			break
		}
		if c.highEvents > 0 && cgroupHighSet(s, c.path) {
			continue // its memory.high throttles it: cgroup_memory_high_throttled says so
		}
		sev, _ := c.sustained()
		ws, hasWS := s.Get("memdoctor_cgroup_memory_working_set_bytes", "cgroup", c.path)
		limit, limitName := cgroupLimitOf(s, c.path, hier)
		f := model.Finding{ID: "cgroup_memory_pressure", Severity: sev, Subject: "cgroup " + c.path,
			Evidence: []model.Evidence{evText("cgroup", c.path), evText("owner", cgroupOwner(s, c.path))}}
		what := fmt.Sprintf("its tasks stalled on memory %.0f%% of the time", c.some)
		if c.hasFull && c.full > 0 {
			what += fmt.Sprintf(" (all of them at once %.0f%%)", c.full)
		}
		if c.inRange {
			what += fmt.Sprintf(" over %s between two readings", format.Duration(time.Duration(c.seconds*float64(time.Second))))
			f.Evidence = append(f.Evidence, ev("some_stall_percent", c.some, "percent"), ev("some_stall_seconds", c.someStalled, "seconds"),
				ev("interval_seconds", c.seconds, "seconds"))
			if c.hasFull {
				f.Evidence = append(f.Evidence, ev("full_stall_percent", c.full, "percent"), ev("full_stall_seconds", c.fullStalled, "seconds"))
			}
		} else {
			what += fmt.Sprintf(" over the last minute (%.0f%% over the last 10 s)", c.someAvg10)
			f.Evidence = append(f.Evidence, ev("some_avg10_percent", c.someAvg10, "percent"), ev("some_avg60_percent", c.some, "percent"))
			if c.hasFull {
				f.Evidence = append(f.Evidence, ev("full_avg60_percent", c.full, "percent"))
			}
		}
		why := "the host's reclaim takes its memory back (no limit of its own is near)"
		nearLimit := false
		if hasWS {
			f.Evidence = append(f.Evidence, ev("working_set_bytes", ws, "bytes"))
		}
		if limit > 0 {
			f.Evidence = append(f.Evidence, ev("limit_bytes", limit, "bytes"))
			if hasWS {
				pct := 100 * ws / limit
				f.Evidence = append(f.Evidence, ev("working_set_percent_of_limit", pct, "percent"))
				if pct >= cgroupPressureNearPct {
					nearLimit = true
					why = fmt.Sprintf("its working set is %.0f%% of its %s %s: it reclaims from itself to stay under it", pct, limitName, format.Bytes(int64(limit)))
				}
			}
		}
		if rf, ok := s.Get("memdoctor_cgroup_memory_stat", "cgroup", c.path, "stat", "workingset_refault_file"); ok {
			f.Evidence = append(f.Evidence, ev("workingset_refault_file", rf, "count"))
		}
		f.Summary = model.NamedSummary(s, c.path, what+": "+why+"; latency suffers and, at its limit, the OOM killer is next")
		f.Remedies = cgroupPressureRemedies(s, c.path, hier, ws, nearLimit)
		out = append(out, f)
	}
	return out
}

// cgroupPressureNearPct: a working set at this share of the limit is what
// the stall comes from (the cgroup reclaims from itself).
const cgroupPressureNearPct = 80

// cgroupLimitOf is the lower of memory.max and memory.high, and its name
// (0 when none).
func cgroupLimitOf(s *sample.Snapshot, p, hier string) (float64, string) {
	limit, name := 0.0, "memory.max"
	if hier == "v1" {
		name = "memory.limit_in_bytes"
	}
	if v, ok := s.Get("memdoctor_cgroup_memory_limit_bytes", "cgroup", p); ok && v > 0 {
		limit = v
	}
	if v, ok := s.Get("memdoctor_cgroup_memory_high_bytes", "cgroup", p); ok && v > 0 && (limit == 0 || v < limit) {
		limit, name = v, "memory.high"
	}
	return limit, name
}

// cgroupPressureRemedies: where the stall comes from, then what to change:
// the limit when the cgroup is at it, else protection from the host's
// reclaim (memory.low), and the workload itself.
func cgroupPressureRemedies(s *sample.Snapshot, p, hier string, ws float64, nearLimit bool) []model.Remedy {
	dir := "/sys/fs/cgroup" + p
	rs := []model.Remedy{{Title: "see how it stalls: memory.pressure, its limits, and whether it re-reads what reclaim took (workingset_refault_*)",
		Commands: []string{"cat " + cgFiles(dir, "memory.pressure", "memory.current", "memory.max", "memory.high", "memory.low"),
			"grep -E '^(anon|file|inactive_file|active_file|workingset_refault_(anon|file)|pgmajfault) ' " + cgFiles(dir, "memory.stat")},
		Risk: "none (read-only)"}}
	if nearLimit {
		return append(rs, cgroupLimitRemedies(s, p, hier)[1:]...)
	}
	unit := p[strings.LastIndex(p, "/")+1:]
	low := roundUpMiB(ws)
	r := model.Remedy{Title: "protect its working set from the host's reclaim with memory.low (reclaimed last, only when nothing else is left)",
		Risk: "protected memory is taken from the rest of the host under pressure: the others stall or are killed instead"}
	switch {
	case strings.Contains(p, "kubepods"):
		r.Commands = []string{"# Kubernetes protects a pod's memory requests with memory.min when the kubelet's MemoryQoS feature gate is on: raise the pod's request",
			"kubectl set resources deployment/<name> -n <namespace> --requests=memory=" + format.Bytes(int64(low))}
	case isUnitName(unit):
		r.Commands = []string{fmt.Sprintf("systemctl set-property --runtime %s MemoryLow=%d   # --runtime: until reboot; drop it to keep the setting", model.ShellArg(unit), int64(low))}
		r.Undo = fmt.Sprintf("systemctl set-property --runtime %s MemoryLow=0", model.ShellArg(unit))
	default:
		r.Commands = []string{fmt.Sprintf("echo %d > %s", int64(low), cgFiles(dir, "memory.low"))}
		r.Undo = "echo 0 > " + cgFiles(dir, "memory.low")
	}
	rs = append(rs, r)
	return append(rs, model.Remedy{Title: "or make the workload need less: a smaller heap or cache, fewer workers, or move it to a host with room",
		Risk: "none until changed"})
}

// cgroupPressureQueries: the share of the range the most stalled cgroup of
// each instance stalled, for instances near the threshold only.
func cgroupPressureQueries(a PrefilterArgs) []PromQuery {
	share := "100 * rate(" + sel("memdoctor_cgroup_memory_pressure_seconds_total", a.Match, `kind="some"`) + "[" + a.Window() + "])"
	return []PromQuery{{"percent", byInstance(share) + " > " + promNum(cgroupPressureSomePct*PrefilterFactor)}}
}

func cgroupPressureScore(v PrefilterValues) float64 {
	if !v.Has("percent") {
		return 0
	}
	return v.V("percent") / cgroupPressureSomePct
}

func cgroupPressureAlerts(o AlertOptions) []Alert {
	share := "100 * rate(" + sel("memdoctor_cgroup_memory_pressure_seconds_total", o.Match, `kind="some"`) + "[5m])"
	return []Alert{{Name: "MemdoctorCgroupMemoryPressure", Expr: share + " > " + promNum(cgroupPressureSomePct), For: "10m", Severity: "warning",
		Summary: "cgroup {{ $labels.cgroup }} on {{ $labels.instance }}: its tasks stall on memory over " + promNum(cgroupPressureSomePct) + "% of the time"}}
}

// sustained says whether the stall reached the rule's thresholds, and how
// badly.
func (c cgStall) sustained() (model.Severity, bool) {
	if c.inRange && c.seconds < cgroupPressureMinSpan.Seconds() {
		return "", false
	}
	if c.hasFull && c.full >= cgroupPressureFullPct && (c.inRange || c.someAvg10 >= cgroupPressureFullPct) {
		return model.Critical, true
	}
	if c.some >= cgroupPressureSomePct && (c.inRange || c.someAvg10 >= cgroupPressureSomePct) {
		return model.Warning, true
	}
	return "", false
}
