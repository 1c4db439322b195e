package diagnose

// gc_heap_slack: the process holds far more heap than it has live, between
// rare major collections.
//
// Mechanism (incident 2): a runtime runs a major collection only when its
// heap is full (Ruby: when free object slots run out; the JVM and .NET:
// when the old generation fills; Go: when the heap doubles over the live
// set). With no memory pressure and a low request rate, the heap stays full
// of garbage for minutes and the process holds memory it does not use.
// Incident 2's metrics server held 70-130 MB RSS; a major GC after each
// /metrics request (scraped every 10 s) brought USS from 90.6 to 17.2 MB
// for 35 ms more mean latency (99 → 134 ms).
//
// Evidence, for heaps whose size the runtime publishes: committed heap,
// or resident memory when it is smaller (a JVM commits its initial heap,
// 1/64 of RAM by default, without touching it: an idle JVM 15 s after
// start had 380 MiB committed and 37 MiB resident) or when the runtime
// publishes no committed figure, against the live heap, and the major-collection rate (recent, else
// since start). Fires: committed ≥ 2 × live and at least 64 MiB of slack,
// and major collections rarer than one a minute (or unknown). Critical at
// ≥ 4 × and 1 GiB. A JVM is judged only once its heap had a chance to
// size itself: after its first collection, or 2 minutes after start; a
// short-lived command-line JVM never is.
//
// Evidence for Ruby, whose garbage the object slots do not show: GC.stat's
// oldmalloc_increase_bytes (memdoctor_runtime_gc_pending_bytes), the bytes
// malloc'd and not freed since the last major GC, and its limit
// (memdoctor_runtime_gc_pending_limit_bytes), the figure at which a minor
// GC turns the next GC into a major one. Measured on Ruby 3.1: minor GCs
// subtract what they free, so only garbage that outlived a minor GC, or
// live growth, stays counted; a major GC resets it to about zero; each
// major GC it triggers raises the limit by 1.2× (RUBY_GC_OLDMALLOC_LIMIT,
// 16 MiB, up to RUBY_GC_OLDMALLOC_LIMIT_MAX, 128 MiB). The count is a
// sawtooth from zero to the limit between major GCs, and freed malloc
// memory mostly stays resident, so the process holds about the limit in
// garbage at its peak. The test metrics server (200 families, 7.8 MB per
// response), after 60 requests: limit 104 MB, 69 MB pending, 138 MB
// resident and 15 major GCs; with a major GC after each (30 requests): 10 KB
// pending, limit 16.8 MB, 61 MB resident. Its object heap was the same 20
// MB both ways, "live" at 99.7 % without the GC (unswept dead slots count
// as live). Fires: the most pending seen or its limit is at least 64 MiB
// and at least a quarter of resident memory (when published). The
// major-collection rate is reported, not required: Ruby's major GCs come
// every so many bytes, not so many seconds, so a busy server has them
// often and still holds the limit in garbage.
//
// Known false positives: a heap sized on purpose (-Xms = -Xmx for a
// latency-sensitive JVM keeps it committed by design); a process that
// just ended a burst (the next major collection comes soon): read again.
// Ruby: oldmalloc growth that is live (a cache filling up) counts as
// pending until a major GC finds it live; a live set that grows between
// two checks is a leak, not slack.
//
// Known false negatives: garbage the runtime still counts as in use. A
// JVM's live figure is the heap in use, so old-generation garbage waiting
// for the next marking reads as live (only the committed-but-free part is
// seen). A Ruby exporter that does not publish the oldmalloc figures
// leaves only the slot counts, which see neither unswept dead objects nor
// malloc'd bodies.

import (
	"fmt"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type gcHeapSlack struct{}

func init() { register(gcHeapSlack{}) }

const (
	slackMinBytes  = 64 << 20
	slackFactor    = 2.0
	slackCritBytes = 1 << 30
	slackCritFact  = 4.0
	slackMaxMajors = 1.0 // per minute
)

func (gcHeapSlack) Meta() Meta {
	return Meta{ID: "gc_heap_slack", Title: "heap held far above the live heap between rare major collections",
		Needs:     []Need{{model.RTLive, "expose the runtime's heap metrics and pass the URL with `memdoctor check --scrape URL` (JVMs are read from hsperfdata without configuration)"}},
		Reads:     model.RuntimeSeries,
		Charts:    []string{ChartGCTimeShare, ChartGCCollections},
		Prefilter: presentPrefilter(model.RTLive),
		Doc:       "the heap held far above the live heap between rare major collections; GC-after-request and runtime knobs, with the latency cost"}
}

func (gcHeapSlack) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	var out []model.Finding
	for i := range in.Host.Runtimes {
		r := &in.Host.Runtimes[i]
		if f, ok := pendingSlack(r); ok {
			out = append(out, f)
			continue
		}
		if r.HeapLiveBytes == nil || *r.HeapLiveBytes <= 0 {
			continue
		}
		live := *r.HeapLiveBytes
		held, heldName, ok := r.HeapHeld()
		if !ok {
			continue
		}
		if unsized(r) {
			continue
		}
		slack := held - live
		if held < slackFactor*live || slack < slackMinBytes {
			continue
		}
		majorsPerMin, span := majorRate(r)
		known := span != nil
		if known && majorsPerMin >= slackMaxMajors {
			continue
		}
		sev := model.Warning
		if held >= slackCritFact*live && slack >= slackCritBytes {
			sev = model.Critical
		}
		rare := "major collections are not published"
		if known {
			rare = fmt.Sprintf("%.2f major collections a minute", majorsPerMin)
		}
		f := model.Finding{ID: "gc_heap_slack", Severity: sev, Subject: runtimeSubject(r),
			Summary: fmt.Sprintf("%s holds %s of heap for %s live (%.1f×; %s): garbage waits for a major collection",
				runtimeSubject(r), format.Bytes(int64(held)), format.Bytes(int64(live)), held/live, rare),
			Evidence: []model.Evidence{
				ev(heldName, held, "bytes"),
				ev("heap_live_bytes", live, "bytes"),
				ev("slack_bytes", slack, "bytes"),
				ev("held_to_live_ratio", held/live, "ratio"),
			}}
		if known {
			f.Evidence = append(f.Evidence, ev("major_collections_per_minute", majorsPerMin, "per_minute"))
		}
		if r.ResidentBytes != nil && heldName != "resident_bytes" {
			f.Evidence = append(f.Evidence, ev("resident_bytes", *r.ResidentBytes, "bytes"))
		}
		if r.HeapCommittedBytes != nil && heldName != "heap_committed_bytes" {
			f.Evidence = append(f.Evidence, ev("heap_committed_bytes", *r.HeapCommittedBytes, "bytes"))
		}
		f.Remedies = slackRemedies(r)
		out = append(out, f)
	}
	return out
}

// slackWarmup is how long a JVM that has run no collection yet is left to
// size its heap before its slack is judged.
const slackWarmup = 120 // seconds

// unsized says whether a JVM's heap has not yet had a chance to size
// itself: no collection yet and younger than slackWarmup. Its heap is then
// the initial one (1/64 of RAM by default, committed but mostly untouched)
// and its live figure all it ever allocated, which says nothing about what
// the program needs; a short-lived command-line JVM never gets past this.
// Any collection counts, not only old ones: a JVM's heap grows and shrinks
// at young collections too, and G1's concurrent cycles, which are its old
// collections, are not in the management beans a scraped JVM publishes.
func unsized(r *model.Runtime) bool {
	if r.Runtime != "jvm" || model.OrZero(r.YoungCollections)+model.OrZero(r.OldCollections)+model.OrZero(r.FullCollections) > 0 {
		return false
	}
	return r.UptimeSeconds > 0 && r.UptimeSeconds < slackWarmup
}

// majorRate is the runtime's major collections a minute, recent else
// lifetime, and the span it covers (nil when unknown).
func majorRate(r *model.Runtime) (float64, *model.GCRates) {
	for _, g := range []*model.GCRates{r.Recent, r.Lifetime} {
		if g != nil && g.Seconds > 0 && (r.OldCollections != nil || r.FullCollections != nil) {
			return 60 * (g.Old + g.Full) / g.Seconds, g
		}
	}
	return -1, nil
}

// pendingShareMin is the least share of resident memory the pending
// garbage must reach (when resident memory is published).
const pendingShareMin = 0.25

// pendingSlack judges a runtime that publishes the memory allocated since
// its last major collection (Ruby).
func pendingSlack(r *model.Runtime) (model.Finding, bool) {
	if r.GCPendingBytes == nil && r.GCPendingLimitBytes == nil {
		return model.Finding{}, false
	}
	pending := model.OrZero(r.GCPendingBytes)
	if r.Recent != nil && r.Recent.PendingMaxBytes != nil {
		pending = max(pending, *r.Recent.PendingMaxBytes)
	}
	peak := max(pending, model.OrZero(r.GCPendingLimitBytes))
	if peak < slackMinBytes {
		return model.Finding{}, false
	}
	if r.ResidentBytes != nil && *r.ResidentBytes > 0 && peak < pendingShareMin**r.ResidentBytes {
		return model.Finding{}, false
	}
	sev := model.Warning
	if peak >= slackCritBytes {
		sev = model.Critical
	}
	majorsPerMin, span := majorRate(r)
	known := span != nil
	sub := runtimeSubject(r)
	of := ""
	if r.ResidentBytes != nil {
		of = fmt.Sprintf(" of its %s resident", format.Bytes(int64(*r.ResidentBytes)))
	}
	rate := ""
	if known {
		rate = fmt.Sprintf("; %.2f major collections a minute %s", majorsPerMin, spanWords(span))
	}
	f := model.Finding{ID: "gc_heap_slack", Severity: sev, Subject: sub,
		Summary: fmt.Sprintf("%s lets up to %s%s pile up as garbage before a major collection frees it (%s allocated and not freed since the last one%s)",
			sub, format.Bytes(int64(peak)), of, format.Bytes(int64(pending)), rate),
		Evidence: []model.Evidence{
			ev("gc_pending_bytes", pending, "bytes"),
			ev("slack_bytes", peak, "bytes"),
		}}
	if r.GCPendingLimitBytes != nil {
		f.Evidence = append(f.Evidence, ev("gc_pending_limit_bytes", *r.GCPendingLimitBytes, "bytes"))
	}
	if r.ResidentBytes != nil {
		f.Evidence = append(f.Evidence, ev("resident_bytes", *r.ResidentBytes, "bytes"),
			ev("slack_to_resident_ratio", peak / *r.ResidentBytes, "ratio"))
	}
	if r.HeapLiveBytes != nil {
		f.Evidence = append(f.Evidence, ev("heap_live_bytes", *r.HeapLiveBytes, "bytes"))
	}
	if known {
		f.Evidence = append(f.Evidence, ev("major_collections_per_minute", majorsPerMin, "per_minute"))
	}
	f.Remedies = slackRemedies(r)
	return f, true
}

const latencyRisk = "each major collection pauses the process (incident 2: mean latency 99 → 134 ms, p99 125 → 234 ms for a ~80% smaller heap): only where requests are rare and the latency cost acceptable, not in request-serving workers; measure both with memdoctor probe before and after the change, then memdoctor probe --compare"

func slackRemedies(r *model.Runtime) []model.Remedy {
	after := model.Remedy{Title: "run a major collection after each low-rate request (a metrics endpoint, a batch job) or periodically", Risk: latencyRisk}
	pid := "PID"
	if r.PID > 0 {
		pid = strconv.Itoa(r.PID)
	}
	switch r.Runtime {
	case "ruby":
		after.Language = "ruby"
		after.Code = []string{"GC.start   # after each /metrics response is written (a full mark and sweep)"}
		after.Commands = []string{
			"memdoctor probe --pid " + pid + " --url URL -n 100 -c 1 --out before.json   # URL: the endpoint; then again with the change: --out after.json",
			"memdoctor probe --compare before.json after.json   # USS/PSS/RSS against latency, the cost this rule cannot know",
		}
		return []model.Remedy{after,
			{Title: "or lower the malloc'd bytes that start a major GC (RUBY_GC_OLDMALLOC_LIMIT: the first limit, 16 MiB; _MAX: its ceiling, 128 MiB; _GROWTH_FACTOR: 1.2 per major GC it starts, and Ruby ignores values not above 1.0)",
				Commands: []string{"RUBY_GC_OLDMALLOC_LIMIT_MAX=33554432 <command>   # at most about 32 MiB of malloc'd garbage between major GCs"},
				Risk:     "more major GCs, each a pause as long as marking the whole heap, when the server is busy as well as idle"},
			{Title: "RUBY_GC_MALLOC_LIMIT (16 MiB) and _MAX (32 MiB) bound the bytes malloc'd between any two GCs: lower, they bring minor GCs sooner, which free young garbage but not what has been promoted; the RUBY_GC_HEAP_* variables size the object slots: GROWTH_FACTOR (1.8) and GROWTH_MAX_SLOTS how fast the slot heap grows, FREE_SLOTS_MAX_RATIO (0.65) how many free slots are kept rather than released, OLDOBJECT_LIMIT_FACTOR (2.0) how many old objects start a major GC",
				Commands: []string{"RUBY_GC_HEAP_GROWTH_FACTOR=1.1 RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.20 RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR=1.3 <command>"},
				Risk:     "they act on the object slots only (a few MB in a typical exporter); a too-small heap makes minor GCs frequent: measure with memdoctor probe"}}
	case "python":
		after.Language, after.Code = "python", []string{"gc.collect()   # after each low-rate request"}
		return []model.Remedy{after}
	case "go":
		after.Language, after.Code = "go", []string{"runtime.GC(); debug.FreeOSMemory()   // after each low-rate request"}
		return []model.Remedy{{Title: "bound the heap with a soft limit and collect earlier",
			Commands: []string{"GOMEMLIMIT=<live heap × 1.5> GOGC=50 <command>"},
			Risk:     "more CPU in GC; a limit below the live heap makes the GC run continuously"}, after}
	case "jvm":
		after.Language, after.Code = "java", []string{"System.gc();   // after each low-rate request (run with -XX:+ExplicitGCInvokesConcurrent)"}
		return []model.Remedy{{Title: "let G1 collect and give memory back when idle",
			Commands: []string{"java -XX:G1PeriodicGCInterval=60000 -XX:MaxHeapFreeRatio=30 -XX:MinHeapFreeRatio=10 ...   # JDK 12+"},
			Risk:     "a periodic concurrent cycle every minute when idle: CPU, and regrowth if load returns"}, after}
	case "dotnet":
		after.Language, after.Code = "csharp", []string{"GC.Collect(2, GCCollectionMode.Optimized, blocking: false, compacting: true);"}
		capHeap := model.Remedy{Title: "cap the heap or ask the GC to conserve memory",
			Commands: []string{dotnetVar(r, "GCHeapHardLimit") + "=0x20000000 <command>   # 512 MiB (hex)", "DOTNET_GCConserveMemory=5 <command>   # .NET 6+, 0-9"},
			Risk:     "a hard limit too low brings OutOfMemoryException; conserve-memory costs CPU"}
		if l := dotnetHardLimit(r); l != "" {
			capHeap.Title = "lower the heap hard limit (" + l + " now) or ask the GC to conserve memory"
		}
		return []model.Remedy{capHeap, after}
	case "node":
		after.Commands = []string{"node --expose-gc ...   # ... : the service's own arguments"}
		after.Language, after.Code = "javascript", []string{"global.gc();   // after each low-rate request"}
		return []model.Remedy{{Title: "cap V8's old space", Commands: []string{"node --max-old-space-size=<MiB> ..."},
			Risk: "a cap below the live heap crashes with heap out of memory"}, after}
	}
	return []model.Remedy{after}
}
