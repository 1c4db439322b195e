package diagnose

// gc_old_generation_churn: old-generation collections are a large
// fraction of young ones.
//
// Mechanism (incident 4): generational collectors assume objects die
// young or live forever. Objects that live just long enough to be promoted
// (caches with short lifetimes, request state held across a few seconds,
// large temporary buffers that go straight to the large-object heap) then
// die in the old generation, which only a major (old, gen2, full)
// collection reclaims: the expensive collections become nearly as frequent
// as the cheap ones. Healthy services see two orders of magnitude fewer
// old collections than young ones.
//
// Evidence: old collections not asked for by code (old minus induced)
// against young ones, over the recent interval or window and since the
// process started; the large-object heap's growth where the runtime
// publishes it (.NET LOH, JVM humongous regions).
//
// Where the runtime says how many objects each generation freed (CPython),
// where garbage dies is judged directly: CPython's thresholds (700/10/10)
// fix the old/young count ratio near 1 %, but in a healthy service the
// young generations free almost everything, and with churn the old one
// does.
//
// Fires: old/young ≥ 10 % with at least 3 non-induced old collections in
// the span judged (recent when known, else lifetime); critical at ≥ 50 %.
// Or, where published, the old generation freeing ≥ 50 % of the objects
// collected (at least 10,000 of them, and 3 old collections); critical
// at ≥ 90 %. Or, where promotion is published (Micrometer's
// jvm_gc_memory_promoted_bytes_total), ≥ 10 % of the bytes allocated
// promoted (at least 16 MiB) with old collections reclaiming them (at
// least one, induced ones included: they free what was promoted too).
// Go's collector is not generational (every cycle is full): not
// judged.
//
// Known false positives: a heap sized so small that the old generation is
// always nearly full (then gc_time_high usually fires too, and the fix is
// a larger heap); CPython counts generation-2 collections that its
// long-lived-objects heuristic skipped as none, so its ratio is exact.

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type gcOldGenerationChurn struct{}

func init() { register(gcOldGenerationChurn{}) }

const (
	churnWarn   = 0.10
	churnCrit   = 0.50
	churnMinOld = 3
	// Where garbage dies (CPython).
	diesOldWarn    = 0.50
	diesOldCrit    = 0.90
	diesOldMinObjs = 10000
	// Promotion (JVM).
	promotedWarn = 0.10
	promotedCrit = 0.50
	promotedMin  = 16 << 20
)

func (gcOldGenerationChurn) Meta() Meta {
	return Meta{ID: "gc_old_generation_churn", Title: "old-generation collections nearly as frequent as young ones",
		Needs:     []Need{{model.RTColl, "expose the runtime's GC metrics and pass the URL with `memdoctor check --scrape URL` (JVMs are read from hsperfdata without configuration)"}},
		Reads:     model.RuntimeSeries,
		Charts:    []string{ChartGCTimeShare, ChartGCCollections},
		Prefilter: presentPrefilter(model.RTColl),
		Doc:       "old-generation collections nearly as frequent as young ones (objects promoted, then dying old); LOH growth"}
}

func (gcOldGenerationChurn) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	var out []model.Finding
	for i := range in.Host.Runtimes {
		r := &in.Host.Runtimes[i]
		g := r.Recent
		which := "recent"
		if g == nil || g.Young+g.Old == 0 {
			g, which = r.Lifetime, "lifetime"
		}
		if g == nil && r.YoungCollections != nil && r.OldCollections != nil {
			g = &model.GCRates{Young: *r.YoungCollections, Old: *r.OldCollections, Induced: r.Induced}
			which = "lifetime"
		}
		if g == nil || r.YoungCollections == nil || r.OldCollections == nil {
			continue
		}
		old := max(g.Old-g.InducedTotal(), 0)
		if g.Young <= 0 {
			continue
		}
		promo := -1.0
		if g.AllocatedBytes > 0 && g.PromotedBytes >= promotedMin && g.Old > 0 {
			promo = g.PromotedBytes / g.AllocatedBytes
		}
		if old < churnMinOld && promo < promotedWarn {
			continue
		}
		ratio := old / g.Young
		freed := g.CollectedYoung + g.CollectedOld
		diesOld := -1.0
		if freed > 0 && g.CollectedOld >= diesOldMinObjs {
			diesOld = g.CollectedOld / freed
		}
		if (ratio < churnWarn || old < churnMinOld) && diesOld < diesOldWarn && promo < promotedWarn {
			continue
		}
		sev := model.Warning
		if (ratio >= churnCrit && old >= churnMinOld) || diesOld >= diesOldCrit || promo >= promotedCrit {
			sev = model.Critical
		}
		span := "since it started"
		if which == "recent" {
			span = spanWords(g)
		}
		summary := fmt.Sprintf("%s ran %.0f old-generation collections for %.0f young ones %s (%.0f%%; healthy is about 1%%): objects live long enough to be promoted, then die",
			runtimeSubject(r), old, g.Young, span, 100*ratio)
		if promo >= promotedWarn && (ratio < churnWarn || old < churnMinOld) {
			summary = fmt.Sprintf("%s promoted %.0f%% of what it allocated to the old generation %s (%s of %s), and old collections reclaim it: objects live long enough to be promoted, then die",
				runtimeSubject(r), 100*promo, span, format.Bytes(int64(g.PromotedBytes)), format.Bytes(int64(g.AllocatedBytes)))
		}
		if diesOld >= diesOldWarn {
			summary = fmt.Sprintf("%s freed %.0f%% of its garbage in the old generation %s (%.0f of %.0f objects; healthy services free nearly all of it young): objects live long enough to be promoted, then die",
				runtimeSubject(r), 100*diesOld, span, g.CollectedOld, freed)
		}
		f := model.Finding{ID: "gc_old_generation_churn", Severity: sev, Subject: runtimeSubject(r),
			Summary: summary,
			Evidence: []model.Evidence{
				ev("old_to_young_percent", 100*ratio, "percent"),
				ev("old_collections", old, "count"),
				ev("young_collections", g.Young, "count"),
				ev("induced_collections", g.InducedTotal(), "count"),
				evText("span", which),
			}}
		if diesOld >= 0 {
			f.Evidence = append(f.Evidence, ev("collected_old_percent", 100*diesOld, "percent"),
				ev("collected_old_objects", g.CollectedOld, "count"), ev("collected_young_objects", g.CollectedYoung, "count"))
		}
		if promo >= 0 {
			f.Evidence = append(f.Evidence, ev("promoted_percent", 100*promo, "percent"),
				ev("promoted_bytes", g.PromotedBytes, "bytes"), ev("allocated_bytes", g.AllocatedBytes, "bytes"))
		}
		if g.Seconds > 0 {
			f.Evidence = append(f.Evidence, ev("old_collections_per_minute", 60*old/g.Seconds, "per_minute"), ev("span_seconds", g.Seconds, "seconds"))
		}
		if r.LargeObjectBytes != nil {
			f.Evidence = append(f.Evidence, ev("large_object_heap_bytes", *r.LargeObjectBytes, "bytes"))
		}
		if g.LargeObjectGrowthBytes != nil {
			f.Evidence = append(f.Evidence, ev("large_object_heap_growth_bytes", *g.LargeObjectGrowthBytes, "bytes"))
		}
		f.Remedies = churnRemedies(r)
		out = append(out, f)
	}
	return out
}

func churnRemedies(r *model.Runtime) []model.Remedy {
	rem := []model.Remedy{{Title: "make objects die young or live forever: pool or reuse the medium-lived objects (buffers, request state), stream instead of building intermediate collections, bound caches by count so entries live long",
		Risk: "code change; verify with the old/young ratio before and after"}}
	switch r.Runtime {
	case "dotnet":
		rem = append(rem, model.Remedy{Title: "keep temporary arrays under 85,000 bytes (chunk them, or rent from ArrayPool<T>.Shared): larger ones go to the large-object heap, collected only with gen2",
			Commands: []string{"dotnet-counters monitor -p <pid> System.Runtime   # gen-2-gc-count, loh-size"},
			Risk:     "code change"})
	case "jvm":
		rem = append(rem, model.Remedy{Title: "see what gets promoted and how old it is",
			Commands: []string{"jstat -gcutil <pid> 1s", "java -Xlog:gc+age=trace ...   # tenuring distribution"},
			Risk:     "logging only"},
			model.Remedy{Title: "give the young generation room so medium-lived objects die there",
				Commands: []string{"java -XX:G1NewSizePercent=30 -XX:+UnlockExperimentalVMOptions ...   # G1", "java -Xmn<size> ...   # Parallel/Serial"},
				Risk:     "a larger young generation lengthens young pauses"})
	case "python":
		rem = append(rem, model.Remedy{Title: "raise CPython's collection thresholds so long-lived objects are scanned less, or freeze the startup heap",
			Commands: []string{"python -c 'import gc; print(gc.get_threshold())'", "gc.set_threshold(50000, 50, 100); gc.freeze()   # in the service's startup"},
			Risk:     "cyclic garbage lives longer before it is collected"})
	}
	return rem
}
