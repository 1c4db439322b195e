package diagnose

// slab_unreclaimable_high: kernel memory the kernel cannot give back.
//
// Mechanism: SUnreclaim is slab memory with no shrinker (kmalloc caches,
// cgroup and network structures, ...). Unlike page cache and dentries it is
// not counted in MemAvailable and is not freed under pressure; it only
// shrinks when its owners free it. Growth usually means a kernel-side leak
// or objects pinned by something (dying memory cgroups in incident 1).
//
// Thresholds: warning at 10 % of MemTotal, critical at 20 %, and never below
// 256 MiB (small hosts and VMs legitimately run 100-200 MiB).
//
// Known false positives: hosts with very many network connections or files
// open hold large legitimate kmalloc/sock caches; the cache list says which.

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type slabUnreclaimableHigh struct{}

func init() { register(slabUnreclaimableHigh{}) }

func (slabUnreclaimableHigh) Meta() Meta {
	return Meta{ID: "slab_unreclaimable_high", Title: "unreclaimable slab memory",
		Needs: []Need{{"node_memory_SUnreclaim_bytes", "read /proc/meminfo (2.6.19+)"},
			{"node_memory_MemTotal_bytes", "read /proc/meminfo"}},
		Charts:    []string{ChartSlabVsCgroups, ChartMemoryCategories},
		Prefilter: &Prefilter{About: "the latest SUnreclaim, in bytes and against MemTotal", Queries: slabHighQueries, Score: slabHighScore},
		Doc:       "unreclaimable slab over 10 % of memory"}
}

func (slabUnreclaimableHigh) Eval(in *Input) []model.Finding {
	if !memoryUsable(in, "slab_unreclaimable_high", false) {
		return nil
	}
	h := in.Host
	s := h.Slab
	if s.UnreclaimableBytes < slabHighMinBytes {
		return nil
	}
	var sev model.Severity
	switch {
	case s.UnreclaimablePercent >= slabHighCritPct:
		sev = model.Critical
	case s.UnreclaimablePercent >= slabHighWarnPct:
		sev = model.Warning
	default:
		return nil
	}
	f := model.Finding{ID: "slab_unreclaimable_high", Severity: sev, Subject: "host",
		Summary: fmt.Sprintf("unreclaimable slab holds %s (%.1f%% of memory, %.0f%% of all slab); the kernel cannot free it under pressure",
			format.Bytes(s.UnreclaimableBytes), s.UnreclaimablePercent, s.UnreclaimableShare),
		Evidence: []model.Evidence{
			ev("slab_unreclaimable_bytes", float64(s.UnreclaimableBytes), "bytes"),
			ev("slab_unreclaimable_percent_of_total", s.UnreclaimablePercent, "percent"),
			ev("slab_reclaimable_bytes", float64(s.ReclaimableBytes), "bytes"),
		},
	}
	n := 0
	for _, c := range s.Top {
		if c.Reclaimable != nil && *c.Reclaimable {
			continue
		}
		f.Evidence = append(f.Evidence, evText("cache", fmt.Sprintf("%s %s (%d objects of %d B)", c.Name, format.Bytes(c.Bytes), c.Objects, c.ObjectSizeBytes)))
		if n++; n == 5 {
			break
		}
	}
	if !s.CachesVisible {
		f.Evidence = append(f.Evidence, evText("caches", "unknown: /proc/slabinfo needs root"))
	}
	if h.Cgroups.MemoryDying != nil {
		f.Evidence = append(f.Evidence, ev("memory_cgroups_dying", float64(*h.Cgroups.MemoryDying), "count"))
	}
	f.Remedies = []model.Remedy{
		{Title: "see which caches hold it and whether they grow",
			Commands: []string{"sudo slabtop -o -s c | head -20", "memdoctor check --json | jq .slab.top"},
			Risk:     "none (read-only)"},
		{Title: "if dying memory cgroups are many, fix their creation (see " + dyingCgroups{}.Meta().ID + "); otherwise look for the subsystem that owns the growing cache (kmalloc-*: enable slab_debug/kmemleak on a test host)",
			Risk: "kmemleak and slab debugging cost CPU and memory; not for production"},
	}
	return []model.Finding{f}
}

// Unreclaimable slab in percent of MemTotal from which the rule warns, from
// which it is critical, and the least it fires on.
const (
	slabHighWarnPct  = 10
	slabHighCritPct  = 20
	slabHighMinBytes = 256 << 20
)

// slabHighQueries: the latest SUnreclaim share, for the instances near the
// threshold in share and in bytes only.
func slabHighQueries(a PrefilterArgs) []PromQuery {
	su := sel("node_memory_SUnreclaim_bytes", a.Match)
	return []PromQuery{{"percent", "(" + lastPercentOfTotal("node_memory_SUnreclaim_bytes", a) + " >= " + promNum(slabHighWarnPct*PrefilterFactor) +
		") and on (instance) (" + byInstance("last_over_time("+su+"["+a.Latest()+"])") + " >= " + promNum(slabHighMinBytes*PrefilterFactor) + ")"}}
}

func slabHighScore(v PrefilterValues) float64 { return v.V("percent") / slabHighWarnPct }
