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
// Evidence: committed heap (or resident memory when the runtime publishes
// no committed figure) against the live heap, and the major-collection
// rate (recent, else since start).
//
// Fires: committed ≥ 2 × live and at least 64 MiB of slack, and major
// collections rarer than one a minute (or unknown). Critical at ≥ 4 × and
// 1 GiB.
//
// Known false positives: a heap sized on purpose (-Xms = -Xmx for a
// latency-sensitive JVM keeps it committed by design); a process that
// just ended a burst (the next major collection comes soon): read again.
//
// Known false negatives: garbage the runtime still counts as in use. A
// JVM's live figure is the heap in use, so old-generation garbage waiting
// for the next marking reads as live (only the committed-but-free part is
// seen). Ruby's heap_live_slots counts every occupied slot, dead objects
// not yet swept included: a heap full of garbage reads as all live (the
// incident-2 metrics server, measured after 74 requests: 137,843 of
// 138,107 slots "live", the same 338-page object heap as with a major GC
// after each request). And that server's garbage is mostly malloc'd string
// bodies outside the object heap, which neither slot count sees: 53 MB
// resident against 25 MB with the GC after each request. GC.stat's
// oldmalloc_increase_bytes (29 MB there: bytes malloc'd for old objects
// since the last major GC) comes closest and is not read.

import "fmt"

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
		Needs: []Need{{rtLive, "expose the runtime's heap metrics and pass the URL with `memdoctor check --scrape URL` (JVMs are read from hsperfdata without configuration)"}},
		Reads: runtimeSeries}
}

func (gcHeapSlack) Eval(in *Input) []Finding {
	if in.Host == nil {
		return nil
	}
	var out []Finding
	for i := range in.Host.Runtimes {
		r := &in.Host.Runtimes[i]
		if r.HeapLiveBytes == nil || *r.HeapLiveBytes <= 0 {
			continue
		}
		live := *r.HeapLiveBytes
		held, heldName := 0.0, "heap_committed_bytes"
		switch {
		case r.HeapCommittedBytes != nil:
			held = *r.HeapCommittedBytes
		case r.ResidentBytes != nil:
			held, heldName = *r.ResidentBytes, "resident_bytes"
		default:
			continue
		}
		slack := held - live
		if held < slackFactor*live || slack < slackMinBytes {
			continue
		}
		majorsPerMin, known := -1.0, false
		for _, g := range []*GCRates{r.Recent, r.Lifetime} {
			if g != nil && g.Seconds > 0 && (r.OldCollections != nil || r.FullCollections != nil) {
				majorsPerMin, known = 60*(g.Old+g.Full)/g.Seconds, true
				break
			}
		}
		if known && majorsPerMin >= slackMaxMajors {
			continue
		}
		sev := Warning
		if held >= slackCritFact*live && slack >= slackCritBytes {
			sev = Critical
		}
		rare := "major collections are not published"
		if known {
			rare = fmt.Sprintf("%.2f major collections a minute", majorsPerMin)
		}
		f := Finding{ID: "gc_heap_slack", Severity: sev, Subject: runtimeSubject(r),
			Summary: fmt.Sprintf("%s holds %s of heap for %s live (%.1f×; %s): garbage waits for a major collection",
				runtimeSubject(r), HumanBytes(int64(held)), HumanBytes(int64(live)), held/live, rare),
			Evidence: []Evidence{
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
		f.Remedies = slackRemedies(r)
		out = append(out, f)
	}
	return out
}

const latencyRisk = "each major collection pauses the process (incident 2: mean latency 99 → 134 ms, p99 125 → 234 ms for a ~80% smaller heap): only where requests are rare and the latency cost acceptable, not in request-serving workers; measure with memdoctor verify"

func slackRemedies(r *Runtime) []Remedy {
	after := Remedy{Title: "run a major collection after each low-rate request (a metrics endpoint, a batch job) or periodically", Risk: latencyRisk}
	switch r.Runtime {
	case "ruby":
		after.Commands = []string{"GC.start(full_mark: true, immediate_sweep: true)   # after each /metrics request"}
		return []Remedy{after, {Title: "or make Ruby's heap grow less and free slots sooner",
			Commands: []string{"RUBY_GC_HEAP_GROWTH_FACTOR=1.1 RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.20 RUBY_GC_OLDMALLOC_LIMIT_MAX=16000000 <command>"},
			Risk:     "more frequent collections"}}
	case "python":
		after.Commands = []string{"gc.collect()   # after each low-rate request"}
		return []Remedy{after}
	case "go":
		after.Commands = []string{"runtime.GC(); debug.FreeOSMemory()   # after each low-rate request"}
		return []Remedy{{Title: "bound the heap with a soft limit and collect earlier",
			Commands: []string{"GOMEMLIMIT=<live heap × 1.5> GOGC=50 <command>"},
			Risk:     "more CPU in GC; a limit below the live heap makes the GC run continuously"}, after}
	case "jvm":
		after.Commands = []string{"System.gc()   # after each low-rate request (with -XX:+ExplicitGCInvokesConcurrent)"}
		return []Remedy{{Title: "let G1 collect and give memory back when idle",
			Commands: []string{"java -XX:G1PeriodicGCInterval=60000 -XX:MaxHeapFreeRatio=30 -XX:MinHeapFreeRatio=10 ...   # JDK 12+"},
			Risk:     "a periodic concurrent cycle every minute when idle: CPU, and regrowth if load returns"}, after}
	case "dotnet":
		after.Commands = []string{"GC.Collect(2, GCCollectionMode.Optimized, blocking: false, compacting: true)"}
		return []Remedy{{Title: "cap the heap or ask the GC to conserve memory",
			Commands: []string{"DOTNET_GCHeapHardLimit=0x20000000 <command>   # 512 MiB (hex)", "DOTNET_GCConserveMemory=5 <command>   # .NET 6+, 0-9"},
			Risk:     "a hard limit too low brings OutOfMemoryException; conserve-memory costs CPU"}, after}
	case "node":
		after.Commands = []string{"node --expose-gc ...; global.gc()   # after each low-rate request"}
		return []Remedy{{Title: "cap V8's old space", Commands: []string{"node --max-old-space-size=<MiB> ..."},
			Risk: "a cap below the live heap crashes with heap out of memory"}, after}
	}
	return []Remedy{after}
}
