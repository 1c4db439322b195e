package diagnose

// cgroup_oom_imminent: a memory cgroup's memory that reclaim cannot take
// back is close to its limit, or will reach it soon at its growth.
//
// Mechanism: at its limit a cgroup reclaims from itself; page cache, active
// or inactive, is taken back (dirty pages once written), but anonymous
// memory without swap, shmem (tmpfs, SysV, memfd) and the kernel's
// unreclaimable allocations are not. When they fill the limit, reclaim
// finds nothing and the OOM killer kills in the cgroup. The working set
// (cgroup_near_limit, kubectl top) counts active page cache and can sit at
// the limit harmlessly; this rule judges what the OOM killer goes by:
// anon + shmem + unreclaimable kernel memory (model.OOMMemory), against
// memory.max (v1 memory.limit_in_bytes) plus the swap it may still take;
// not memory.high, over which the kernel throttles the cgroup and does not
// kill (cgroup_memory_high_throttled judges that).
//
// Method: per cgroup whose memory.stat was read, on the latest sample:
// the distance (limit less unreclaimable, plus swap room) as a share of
// the limit. On a time range (a recording, a fleet), the unreclaimable
// part's slope (Theil–Sen, Mann–Kendall p < 1 % corrected for the
// autocorrelation of the samples: model.OOMGrowth) over the last 6 hours
// of the newest boot says when the distance is used.
//
// Thresholds: warning when the distance is under 10 % of the limit or the
// growth uses it within a day; critical under 3 % or within an hour: the
// margins of cgroup_near_limit's 90 % and 97 %, and a day leaves time to
// act before the kill, an hour does not.
//
// Known false positives: v1 memory.stat has no kernel keys: the kernel part
// is estimated as usage less anon and file, which can count reclaimable
// slab (dentries) as unreclaimable. A JVM or a database sized to its
// limit on purpose holds its heap or buffer pool as anon near the limit by
// design (its own limits keep it there).

import (
	"fmt"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type cgroupOOMImminent struct{}

func init() { register(cgroupOOMImminent{}) }

// The distance to the OOM kill, as a share of the limit in percent, under
// which the rule warns and under which it is critical; the time at the
// current growth under which it warns and is critical; how many findings
// at most (the nearest first).
const (
	oomImminentWarnPct     = 10
	oomImminentCritPct     = 3
	oomImminentWarnETA     = 24 * time.Hour
	oomImminentCritETA     = time.Hour
	oomImminentMaxFindings = 10
)

func (cgroupOOMImminent) Meta() Meta {
	return Meta{ID: "cgroup_oom_imminent", Title: "a memory cgroup's unreclaimable memory close to its limit, or reaching it soon",
		Needs: []Need{{"memdoctor_cgroup_memory_anon_bytes", "memdoctor check or record (memory cgroups' memory.stat)"}},
		Reads: []string{"memdoctor_cgroup_memory_usage_bytes", "memdoctor_cgroup_memory_file_bytes", "memdoctor_cgroup_memory_shmem_bytes",
			"memdoctor_cgroup_memory_stat", "memdoctor_cgroup_memory_limit_bytes",
			"memdoctor_cgroup_memory_swap_bytes", "memdoctor_cgroup_memory_swap_limit_bytes", "node_memory_SwapFree_bytes",
			"memdoctor_cgroup_memory_unreclaimable_bytes", "memdoctor_cgroup_owner_info"},
		Charts: []string{ChartCgroupMemory, ChartMemoryCategories},
		Prefilter: &Prefilter{About: "the latest anon and shmem against the limit, per cgroup", Queries: oomImminentQueries,
			Score: func(v PrefilterValues) float64 {
				if !v.Has("percent") {
					return 0
				}
				return v.V("percent") / (100 - oomImminentWarnPct)
			}},
		Alerts: oomImminentAlerts,
		Doc: fmt.Sprintf("a memory cgroup's anon, shmem and unreclaimable kernel memory (what reclaim cannot take back) within %d %% of its limit (critical: %d %%), or reaching it within %s hours at its growth over a time range (critical: %s): page cache does not count",
			oomImminentWarnPct, oomImminentCritPct, promNum(oomImminentWarnETA.Hours()), plural(oomImminentCritETA.Hours(), "hour", "hours"))}
}

func (cgroupOOMImminent) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	s := in.Host.S
	type near struct {
		path string
		m    model.OOMMemory
		pct  float64 // distance as a share of the limit
		eta  float64 // seconds, -1 for none
	}
	var all []near
	for _, u := range s.Select("memdoctor_cgroup_memory_usage_bytes") {
		p := u.Labels.Get("cgroup")
		m, ok := model.OOMMemoryFrom(s, p)
		if !ok || m.LimitBytes == nil || *m.LimitBytes <= 0 {
			continue
		}
		if g, ok := model.UnreclaimableGrowth(in.Window, p); ok {
			m.SetGrowth(g)
		}
		n := near{path: p, m: m, pct: 100 * float64(*m.DistanceBytes) / float64(*m.LimitBytes), eta: -1}
		if m.ETASeconds != nil {
			n.eta = *m.ETASeconds
		}
		if n.pct >= oomImminentWarnPct && (n.eta < 0 || n.eta > oomImminentWarnETA.Seconds()) {
			continue
		}
		all = append(all, n)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].pct < all[j].pct })
	if len(all) > oomImminentMaxFindings {
		all = all[:oomImminentMaxFindings]
	}
	limitName := "memory.max"
	if in.Host.Cgroups.MemoryHierarchy == "v1" {
		limitName = "memory.limit_in_bytes"
	}
	var out []model.Finding
	for _, n := range all {
		m := n.m
		sev := model.Warning
		if n.pct < oomImminentCritPct || (n.eta >= 0 && n.eta <= oomImminentCritETA.Seconds()) {
			sev = model.Critical
		}
		name := limitName
		summary := fmt.Sprintf("%s of its %s %s is memory reclaim cannot take back (anon %s, shmem %s, kernel %s): %s left before the OOM killer acts",
			format.Bytes(m.UnreclaimableBytes), name, format.Bytes(*m.LimitBytes), format.Bytes(m.AnonBytes), format.Bytes(m.ShmemBytes),
			format.Bytes(m.KernelBytes), format.Bytes(max(*m.DistanceBytes, 0)))
		if m.SwapRoomBytes > 0 {
			summary += fmt.Sprintf(" (counting %s it may still swap out)", format.Bytes(m.SwapRoomBytes))
		}
		f := model.Finding{ID: "cgroup_oom_imminent", Severity: sev, Subject: "cgroup " + n.path,
			Evidence: []model.Evidence{
				evText("cgroup", n.path),
				evText("owner", cgroupOwner(s, n.path)),
				ev("unreclaimable_bytes", float64(m.UnreclaimableBytes), "bytes"),
				ev("limit_bytes", float64(*m.LimitBytes), "bytes"),
				ev("oom_distance_bytes", float64(*m.DistanceBytes), "bytes"),
				ev("oom_distance_percent_of_limit", n.pct, "percent"),
				ev("anon_bytes", float64(m.AnonBytes), "bytes"),
				ev("shmem_bytes", float64(m.ShmemBytes), "bytes"),
				ev("kernel_unreclaimable_bytes", float64(m.KernelBytes), "bytes"),
				ev("page_cache_bytes", float64(m.ActiveFileBytes+m.InactiveFileBytes), "bytes"),
				ev("usage_bytes", float64(m.UsageBytes), "bytes"),
			},
			Remedies: cgroupLimitRemedies(s, n.path, in.Host.Cgroups.MemoryHierarchy),
		}
		if m.SwapRoomBytes > 0 {
			f.Evidence = append(f.Evidence, ev("swap_room_bytes", float64(m.SwapRoomBytes), "bytes"))
		}
		if n.eta >= 0 {
			summary += fmt.Sprintf("; growing %s an hour, it is used up in about %s", format.Bytes(int64(*m.GrowthBytesPerSecond*3600)),
				format.Duration(time.Duration(n.eta*float64(time.Second))))
			f.Evidence = append(f.Evidence, ev("unreclaimable_growth_bytes_per_hour", *m.GrowthBytesPerSecond*3600, "bytes"),
				ev("oom_eta_seconds", n.eta, "seconds"))
		}
		f.Summary = model.NamedSummary(s, n.path, summary)
		out = append(out, f)
	}
	return out
}

// oomImminentQueries: the latest anon + shmem against the limit, the
// nearest cgroup per instance (the kernel part is left out: PromQL has no
// one expression of it on every kernel).
func oomImminentQueries(a PrefilterArgs) []PromQuery {
	last := func(name string) string { return "last_over_time(" + sel(name, a.Match) + "[" + a.Latest() + "])" }
	ratio := "100 * (" + last("memdoctor_cgroup_memory_anon_bytes") + " + on (instance, cgroup) " + last("memdoctor_cgroup_memory_shmem_bytes") +
		") / on (instance, cgroup) " + last("memdoctor_cgroup_memory_limit_bytes")
	return []PromQuery{{"percent", byInstance(ratio) + " > " + promNum((100-oomImminentWarnPct)*PrefilterFactor)}}
}

// oomImminentAlerts read the recorder's own distance and time series.
func oomImminentAlerts(o AlertOptions) []Alert {
	dist := "100 * " + sel("memdoctor_cgroup_memory_oom_distance_bytes", o.Match) + " / on (instance, cgroup) " + sel("memdoctor_cgroup_memory_limit_bytes", o.Match)
	return []Alert{
		{Name: "MemdoctorCgroupOOMNear", Expr: dist + " < " + promNum(oomImminentWarnPct), For: "10m", Severity: "warning",
			Summary: "cgroup {{ $labels.cgroup }} on {{ $labels.instance }}: less than " + promNum(oomImminentWarnPct) + "% of its memory limit left that reclaim can make room in"},
		{Name: "MemdoctorCgroupOOMSoon", Expr: sel("memdoctor_cgroup_memory_oom_eta_seconds", o.Match) + " < " + promNum(oomImminentCritETA.Seconds()), For: "5m", Severity: "critical",
			Summary: "cgroup {{ $labels.cgroup }} on {{ $labels.instance }}: its unreclaimable memory reaches the limit within the hour at its growth"},
	}
}
