package diagnose

// malloc_arenas_many: a glibc process with many malloc arenas and a large heap.
//
// Mechanism: glibc gives threads their own arenas, up to 8 × CPUs on 64-bit
// (each a chain of 64 MiB heap reservations). Memory freed in one arena
// cannot serve another and is returned to the kernel only from the top of
// each heap or by malloc_trim, so a many-threaded service holds freed memory
// as RSS: incident 5 had ~100 arenas holding 137 GB of free chunks.
//
// The arena count is estimated from /proc/PID/maps (64 MiB-aligned anonymous
// heap reservations + the main arena); an arena that outgrew one heap counts
// twice, so it is an upper bound.
//
// Thresholds: arenas near the process' own limit, at least half of it
// (glibc's default of 8 × CPUs, or the cap it was started with:
// GLIBC_TUNABLES=glibc.malloc.arena_max, else MALLOC_ARENA_MAX, read from
// its environment), never fewer than 4 and never more than 16 needed; and
// at least 256 MiB of anonymous memory; warning. A fixed 16 missed the
// small hosts, where the limit is 16 or less: a ThreadingHTTPServer whose
// requests build and drop ~30 MB held 513 MiB free (94%) in 9 arenas on 2
// CPUs. A capped process counts at most its cap (the estimate counts an
// arena per heap), so one capped at 2 or 3 is never judged many. It is a
// suspicion, not a proof: the finding says to run `memdoctor malloc PID`,
// whose malloc_info (free bytes per arena) proves it. A cap is offered
// only below the process' own (never one that raises it).
//
// Runtimes with heaps of their own: a JVM's committed Java heap, a .NET or
// Node (V8) managed heap is anonymous memory too, but not malloc's. Their
// committed heap (memdoctor_runtime_heap_committed_bytes of the process) is
// subtracted before the 256 MiB line; when it is unknown the process is not
// judged (a note says so). A Go program's heap is Go's own (its 64 MiB
// arenas look like glibc heaps in the maps): not judged at all.
//
// Known false positives: a service whose threads legitimately keep large
// live heaps per arena; the proof is the free bytes per arena. The estimate
// of a runtime process may count some of the runtime heap's 64 MiB-aligned
// pieces as arenas.

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type mallocArenasMany struct{}

func init() { register(mallocArenasMany{}) }

func (mallocArenasMany) Meta() Meta {
	return Meta{ID: "malloc_arenas_many", Title: "glibc processes with many malloc arenas",
		Needs:     []Need{{"memdoctor_process_rss_bytes", "memdoctor's process collector (--top N)"}},
		Charts:    []string{ChartProcessMemory, ChartAllocatorView},
		Prefilter: presentPrefilter("memdoctor_process_malloc_arenas"),
		Doc:       "a glibc process with many malloc arenas and a large heap"}
}

const (
	arenasMin    = 16
	arenasFloor  = 4
	arenaAnonMin = 256 << 20
)

// arenaLimit is the most arenas p may create: its own cap, else glibc's
// default of 8 × CPUs on 64-bit (0 when the CPUs are unknown).
func arenaLimit(p model.Process, cpus int) (limit int64, capped bool) {
	if p.ArenaMax != nil && *p.ArenaMax > 0 {
		return *p.ArenaMax, true
	}
	return 8 * int64(cpus), false
}

// arenaThreshold is the arena count judged many under a limit: half of it
// (rounded up), at least arenasFloor and at most arenasMin.
func arenaThreshold(limit int64) int64 {
	if limit <= 0 {
		return arenasMin
	}
	return min(arenasMin, max(arenasFloor, (limit+1)/2))
}

func (mallocArenasMany) Eval(in *Input) []model.Finding {
	h := in.Host
	if h == nil {
		return nil
	}
	var out []model.Finding
	for _, p := range h.Processes {
		if p.MallocArenas == nil || p.AnonBytes < arenaAnonMin || !glibcMalloc(p) {
			continue
		}
		limit, capped := arenaLimit(p, h.Info.CPUs)
		a := *p.MallocArenas
		if capped {
			a = min(a, limit)
		}
		if a < arenaThreshold(limit) {
			continue
		}
		rt := ownHeapRuntime(h, p.PID)
		outside, heap := p.AnonBytes, int64(0)
		if rt != nil {
			if rt.Runtime == "go" {
				continue // Go's heap, not malloc's
			}
			if rt.HeapCommittedBytes == nil {
				in.Note("malloc_arenas_many", fmt.Sprintf("%s (pid %d) is a %s process whose committed heap is unknown: its %s of anonymous memory cannot be told from malloc's, so its arenas were not judged",
					p.Comm, p.PID, rt.Runtime, format.Bytes(p.AnonBytes)), "make its heap visible: "+runtimeHeapHint(rt.Runtime))
				continue
			}
			heap = int64(*rt.HeapCommittedBytes)
			outside = max(p.AnonBytes-heap, 0)
			if outside < arenaAnonMin {
				continue
			}
		}
		mem := format.Bytes(p.AnonBytes) + " anonymous memory"
		if rt != nil {
			mem = fmt.Sprintf("%s anonymous memory outside its %s heap (%s of %s)", format.Bytes(outside), rt.Runtime, format.Bytes(heap), format.Bytes(p.AnonBytes))
		}
		f := model.Finding{ID: "malloc_arenas_many", Severity: model.Warning, Subject: fmt.Sprintf("process %s (pid %d)", p.Comm, p.PID),
			Summary: fmt.Sprintf("%s has ~%d malloc arenas across %d threads and %s: freed memory may be held per arena instead of returned (%s); to confirm: memdoctor malloc %d",
				p.Comm, a, p.Threads, mem, limitWords(limit, capped, h.Info.CPUs), p.PID),
			Evidence: []model.Evidence{
				ev("malloc_arenas_estimated", float64(a), "count"),
				ev("threads", float64(p.Threads), "count"),
				ev("anon_bytes", float64(p.AnonBytes), "bytes"),
				ev("rss_bytes", float64(p.RSSBytes), "bytes"),
			},
		}
		if rt != nil {
			f.Evidence = append(f.Evidence, evText("runtime", rt.Runtime),
				ev("runtime_heap_committed_bytes", float64(heap), "bytes"),
				ev("anon_outside_runtime_heap_bytes", float64(outside), "bytes"))
		}
		if h.Info.CPUs > 0 {
			f.Evidence = append(f.Evidence, ev("glibc_default_arena_limit", float64(8*h.Info.CPUs), "count"))
		}
		if capped {
			f.Evidence = append(f.Evidence, ev("malloc_arena_max", float64(limit), "count"))
		}
		if h.Info.Glibc != "" {
			f.Evidence = append(f.Evidence, evText("glibc", h.Info.Glibc))
		}
		pid := fmt.Sprint(p.PID)
		f.Remedies = []model.Remedy{
			{Title: "prove it: ask the allocator how much of the heap is free",
				Commands: []string{"memdoctor malloc " + pid},
				Risk:     "holds one thread of the process for about a millisecond (more for huge heaps); the other threads run"},
			{Title: "give freed memory back now: see the expected gain, then trim (RSS is measured before and after)",
				Commands: []string{"memdoctor trim " + pid, "memdoctor trim " + pid + " --apply"},
				Risk:     "holds one thread during the trim (proportional to memory freed: 0.2 s for 4 GB in incident 5); the other threads run"},
		}
		if !capped || limit > arenaCapTo {
			f.Remedies = append(f.Remedies, model.Remedy{Title: "cap the arenas at the next restart",
				Commands: []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=4 <command>   # or MALLOC_ARENA_MAX=4"},
				Risk: "more lock contention between threads in malloc; measure throughput. It gives back what the arenas retain when freed memory is spread over many of them (a Ruby server's RSS fell 69%); " +
					"it does not help when the memory is in use (a leak, a cache) or freed in a few arenas only: memdoctor malloc shows which"})
		}
		f.Remedies = append(f.Remedies,
			model.Remedy{Title: "or run it on jemalloc, which returns freed memory on its own",
				Commands: []string{"apt-get install libjemalloc2", "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 <command>"},
				Risk:     "a different allocator: validate performance and memory on a canary first"})
		out = append(out, f)
	}
	return out
}

// limitWords says which arena limit the count was judged against.
func limitWords(limit int64, capped bool, cpus int) string {
	switch {
	case capped:
		return fmt.Sprintf("its cap is %d", limit)
	case limit > 0:
		return fmt.Sprintf("glibc's limit here is %d: 8 × %d CPUs", limit, cpus)
	}
	return "the CPUs, and so glibc's limit, are unknown"
}

// ownHeapRuntime returns the runtime of pid when it keeps a heap of its own
// (JVM, .NET, Node, Go), preferring a reading with the committed heap.
func ownHeapRuntime(h *model.Host, pid int) *model.Runtime {
	var found *model.Runtime
	for i := range h.Runtimes {
		r := &h.Runtimes[i]
		if r.PID != pid || pid <= 0 {
			continue
		}
		switch r.Runtime {
		case "jvm", "dotnet", "node", "go":
		default:
			continue
		}
		if found == nil || found.HeapCommittedBytes == nil && r.HeapCommittedBytes != nil {
			found = r
		}
	}
	return found
}

// runtimeHeapHint says how a runtime's committed heap becomes visible.
func runtimeHeapHint(runtime string) string {
	switch runtime {
	case "jvm":
		return strings.Join([]string{"memdoctor reads it from the JVM's hsperfdata file (it is missing with -XX:-UsePerfData or -XX:+PerfDisableSharedMem)",
			"or pass its Micrometer / jmx_exporter endpoint with --scrape"}, ", ")
	case "dotnet":
		return "pass its metrics endpoint (OpenTelemetry process_runtime_dotnet_gc_committed_memory_size_bytes, or prometheus-net dotnet_gc_last_collection_memory_committed_size_bytes) with --scrape"
	default:
		return "pass its prom-client endpoint (nodejs_heap_size_total_bytes) with --scrape"
	}
}
