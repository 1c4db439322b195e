package diagnose

// gc_large_object_allocation: large-object allocations make the old
// generation collect.
//
// Mechanism (incident 4): in .NET an object of 85,000 bytes or more (an
// array of 85 KB, a large string) goes to the large-object heap, which is
// collected only with generation 2. When large allocations exhaust the
// LOH's budget, the runtime starts a gen2 collection (reason AllocLarge,
// or OutOfSpaceLOH when the heap has no room left), and the allocating
// thread waits for it; under Server GC with background collections the
// allocation still waits for the background gen2 to reach a point where
// LOH allocation may go on. Buffers allocated per request, large
// serialisation buffers and growing lists of large arrays turn request
// rate into full collections.
//
// Evidence: the gen2 collections the runtime says large-object allocation
// triggered (GCStart's reason, read through the diagnostics port), their
// share of all gen2 collections, and the bytes allocated on the LOH (the
// runtime's allocation ticks, one per ~100 KB) and their rate.
//
// Fires: at least largeTriggeredMin such gen2 collections in the span and
// at least largeShareMin of the gen2 collections; warning from
// largeWarnPerMinute a minute.
//
// Known false positives: a batch job that allocates large arrays once and
// keeps them (the collections end with the allocation); a process whose
// gen2 collections are few and cheap (small heap): the pause figures of
// gc_time_high say whether they cost.

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

const (
	// largeTriggeredMin: fewer gen2 collections triggered by large
	// allocation in a span are noise (one at start-up is normal).
	largeTriggeredMin = 3
	// largeShareMin: the share of gen2 collections triggered by
	// large-object allocation from which it is the large objects that set
	// the pace of full collections.
	largeShareMin = 0.25
	// largeWarnPerMinute: from one a minute, full collections are a
	// steady cost.
	largeWarnPerMinute = 1.0
)

type gcLargeObjectAllocation struct{}

func init() { register(gcLargeObjectAllocation{}) }

func (gcLargeObjectAllocation) Meta() Meta {
	return Meta{ID: "gc_large_object_allocation", Title: "large-object allocations triggering gen2 collections",
		// The .NET readings through the port have the collections; a
		// runtime without the LOH series is skipped in Eval.
		Needs:  []Need{{model.RTColl, "expose the runtime's GC metrics and pass the URL with `memdoctor check --scrape URL` (JVMs are read from hsperfdata without configuration)"}},
		Reads:  model.RuntimeSeries,
		Charts: []string{ChartGCCollections, ChartGCTimeShare},
		Alerts: gcLargeAlerts,
		Prefilter: &Prefilter{About: "gen2 collections triggered by large-object allocation within the range",
			Queries: gcLargeQueries, Score: gcLargeScore},
		Doc: "gen2 collections triggered by large-object-heap allocation (.NET), their share of gen2 collections and the LOH allocation rate"}
}

func gcLargeAlerts(o AlertOptions) []Alert {
	return []Alert{{Name: "MemdoctorLargeObjectGen2", For: "15m", Severity: "warning",
		Expr:    fmt.Sprintf("increase(%s[15m]) >= %d", sel(model.RTLargeTrig, o.Match, `generation="old"`), largeTriggeredMin),
		Summary: "{{ $labels.runtime }} process {{ $labels.target }}: large-object allocations trigger gen2 collections",
		Runbook: runtimeRunbook("gc_large_object_allocation")}}
}

func gcLargeQueries(a PrefilterArgs) []PromQuery {
	return []PromQuery{{"large_gen2", byInstance("increase(" + sel(model.RTLargeTrig, a.Match, `generation="old"`) + "[" + a.Window() + "])")}}
}

func gcLargeScore(v PrefilterValues) float64 { return v.V("large_gen2") / largeTriggeredMin }

func (gcLargeObjectAllocation) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	var out []model.Finding
	for i := range in.Host.Runtimes {
		r := &in.Host.Runtimes[i]
		if r.LargeTriggeredOld == nil {
			continue
		}
		g, which := r.Recent, "recent"
		if g == nil {
			g, which = r.Lifetime, "lifetime"
		}
		if g == nil || g.Seconds <= 0 || g.LargeTriggeredOld < largeTriggeredMin || g.Old <= 0 {
			continue
		}
		share := g.LargeTriggeredOld / g.Old
		if share < largeShareMin {
			continue
		}
		perMin := 60 * g.LargeTriggeredOld / g.Seconds
		sev := model.Info
		if perMin >= largeWarnPerMinute {
			sev = model.Warning
		}
		span := "since it started"
		if which == "recent" {
			span = spanWords(g)
		}
		evs := []model.Evidence{ev("large_triggered_gen2", g.LargeTriggeredOld, "count"), ev("gen2_collections", g.Old, "count"),
			ev("large_triggered_share", share, "ratio"), ev("large_triggered_per_minute", perMin, "per_minute"), evText("span", which)}
		alloc := ""
		if g.LargeAllocatedBytes > 0 {
			rate := g.LargeAllocatedBytes / g.Seconds
			evs = append(evs, ev("loh_allocated_bytes", g.LargeAllocatedBytes, "bytes"), ev("loh_allocation_rate", rate, "bytes_per_second"))
			alloc = fmt.Sprintf(", allocating %s/s on the large-object heap", format.Bytes(int64(rate)))
		}
		summary := fmt.Sprintf("%s ran %.0f of its %.0f gen2 collections %s because large objects (85,000 bytes or more) were allocated (%.0f%%, %.1f a minute)%s: each allocation that hits the LOH budget waits for a full collection",
			runtimeSubject(r), g.LargeTriggeredOld, g.Old, span, 100*share, perMin, alloc)
		out = append(out, model.Finding{ID: "gc_large_object_allocation", Severity: sev, Subject: runtimeSubject(r), Summary: summary,
			Evidence: evs, Remedies: largeRemedies(r)})
	}
	return out
}

// largeRemedies are the .NET docs' remedies, fitted to the settings in
// force where they were read: no Server GC advised to a Server GC, no
// heap hard limit to a runtime that has one, variables with the prefix
// the runtime reads.
func largeRemedies(r *model.Runtime) []model.Remedy {
	budget := model.Remedy{Title: "give the LOH a larger allocation budget: Server GC (many heaps, larger budgets), or DATAS on .NET 8+; in a container set a heap hard limit so budgets follow the limit",
		Risk: "Server GC uses more memory (a heap per core); restart needed"}
	server, known := r.ServerGC()
	limit := dotnetHardLimit(r)
	switch {
	case server:
		budget.Title = "Server GC is on already (" + heapsWords(r) + "): give the LOH budget room with DATAS on .NET 8+, or a larger heap hard limit"
		budget.Risk = "restart needed"
		if limit == "" {
			budget.Title = "Server GC is on already (" + heapsWords(r) + "): try DATAS on .NET 8+; in a container set a heap hard limit so budgets follow the limit"
		}
	case known:
		budget.Title = "give the LOH a larger allocation budget: Server GC (many heaps, larger budgets; it runs Workstation GC now), or DATAS on .NET 8+"
	}
	if !server {
		budget.Commands = append(budget.Commands, dotnetVar(r, "gcServer")+"=1 <command>   # or <ServerGarbageCollector>true</ServerGarbageCollector>")
	}
	budget.Commands = append(budget.Commands, "DOTNET_GCDynamicAdaptationMode=1 <command>   # .NET 8+: DATAS")
	container := "the container's limit"
	switch {
	case limit != "":
		budget.Title += "; its heap hard limit is " + limit
	case r.CgroupLimitBytes != nil:
		// The process runs under a memory limit: name it.
		container = format.Bytes(*r.CgroupLimitBytes)
		cg := ""
		if model.Printable(r.Cgroup) && len(r.Cgroup) <= 256 {
			cg = " " + r.Cgroup
		}
		budget.Title = strings.Replace(budget.Title, "in a container set a heap hard limit",
			"its memory cgroup"+cg+" is limited to "+container+": set a heap hard limit", 1)
	case r.Cgroup != "":
		// Joined to its cgroup, which has no limit: no container advice.
		budget.Title = strings.Replace(budget.Title, "; in a container set a heap hard limit so budgets follow the limit", "", 1)
	}
	if limit == "" && (r.CgroupLimitBytes != nil || r.Cgroup == "") {
		budget.Commands = append(budget.Commands, dotnetVar(r, "GCHeapHardLimitPercent")+"=0x4B <command>   # 75% of "+container+" (hex)")
	}
	return []model.Remedy{
		{Title: "pool large buffers instead of allocating one per request: ArrayPool<byte>.Shared.Rent/Return (or RecyclableMemoryStream for streams)",
			Commands: []string{"var buf = ArrayPool<byte>.Shared.Rent(size); try { ... } finally { ArrayPool<byte>.Shared.Return(buf); }"},
			Risk:     "code change; a buffer used after Return is corrupted by its next renter"},
		{Title: "compact the large-object heap once when it is fragmented",
			Commands: []string{"GCSettings.LargeObjectHeapCompactionMode = GCLargeObjectHeapCompactionMode.CompactOnce; GC.Collect();"},
			Risk:     "the compaction itself is one long blocking collection"},
		budget,
		{Title: "or keep latency-critical periods free of blocking gen2 collections",
			Commands: []string{"GCSettings.LatencyMode = GCLatencyMode.SustainedLowLatency;"},
			Risk:     "the heap grows more between full collections"},
	}
}
