// Package runtimes reads the garbage collectors of the language runtimes
// running on a host and maps what each publishes onto one set of series
// (memdoctor_runtime_*), so rules judge a JVM, a Go, Python, .NET, Ruby or
// Node service alike:
//
//   - Scrape reads an application's Prometheus endpoint (text format or
//     OpenMetrics) and Normalize maps the names of each runtime's usual
//     client library onto the normalised series;
//   - ParseHsperf reads a HotSpot JVM's perf-data file without attaching;
//   - Detect names the runtime of any process from its mappings and says
//     how to expose its GC metrics.
//
// It reads only: nothing here attaches to, signals or pauses a process.
package runtimes

import (
	"sort"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Normalised series (the shared contract). Labels on every series: target
// (the scrape URL, or "pid/N" for data read from the process directly),
// runtime, and pid and comm when known.
const (
	// Info is 1, with labels version (runtime version) and source
	// (scrape, hsperfdata or maps).
	Info = "memdoctor_runtime_info"
	// GCSeconds is the cumulative time the runtime reports in GC pauses.
	GCSeconds = "memdoctor_runtime_gc_seconds_total"
	// Collections counts collections, label generation = young | old
	// (full for a non-generational collector: Go).
	Collections = "memdoctor_runtime_gc_collections_total"
	// Induced counts explicit or induced collections, label cause.
	Induced = "memdoctor_runtime_gc_induced_total"
	// HeapLive is the live or in-use heap.
	HeapLive = "memdoctor_runtime_heap_live_bytes"
	// HeapCommitted is the heap memory the runtime holds from the OS.
	HeapCommitted = "memdoctor_runtime_heap_committed_bytes"
	// HeapLimit is the configured maximum heap.
	HeapLimit = "memdoctor_runtime_heap_limit_bytes"
	// Resident is the process' resident memory.
	Resident = "memdoctor_runtime_resident_bytes"
	// LargeObjects is the large-object heap (.NET LOH, JVM humongous), where
	// visible.
	LargeObjects = "memdoctor_runtime_heap_large_object_bytes"
	// StartTime is the process' start, Unix seconds (for lifetime rates).
	StartTime = "memdoctor_runtime_start_time_seconds"
	// CollectedObjects counts objects freed per generation, label
	// generation = young | old (CPython: where garbage dies).
	CollectedObjects = "memdoctor_runtime_gc_collected_objects_total"
	// Promoted counts bytes promoted to the old generation, Allocated bytes
	// allocated in the young one (JVM, Micrometer).
	Promoted  = "memdoctor_runtime_gc_promoted_bytes_total"
	Allocated = "memdoctor_runtime_gc_allocated_bytes_total"
	// GCPending is the memory allocated since the last major collection and
	// not freed since: the garbage a major collection would free (plus any
	// growth of the live set). Ruby: GC.stat oldmalloc_increase_bytes.
	GCPending = "memdoctor_runtime_gc_pending_bytes"
	// GCPendingLimit is the GCPending at which the runtime starts its next
	// major collection. Ruby: GC.stat oldmalloc_increase_bytes_limit.
	GCPendingLimit = "memdoctor_runtime_gc_pending_limit_bytes"
	// LastCause is 1 with label cause: the cause of the latest collection
	// (JVM).
	LastCause = "memdoctor_runtime_gc_last_cause_info"
)

// Generations of Collections.
const (
	Young = "young"
	Old   = "old"
	Full  = "full"
)

// Runtime names (label runtime).
const (
	Go     = "go"
	Python = "python"
	JVM    = "jvm"
	DotNet = "dotnet"
	Ruby   = "ruby"
	Node   = "node"
)

// Reading is one runtime's normalised state at one instant.
type Reading struct {
	Target, Runtime, Version, Source string
	PID                              int
	Comm                             string
	// Also is the other target the same process was read through (its
	// scrape URL, or pid/N), when this reading was kept for being richer.
	Also string
	// Values are the normalised series without the common labels: name
	// plus extra labels (generation, cause).
	Values []sample.Metric
}

func (r *Reading) add(name string, v float64, labels ...string) {
	r.Values = append(r.Values, sample.Metric{Name: name, Labels: sample.L(labels...), Value: v})
}

// Metrics returns the reading as samples carrying the common labels.
func (r *Reading) Metrics() []sample.Metric {
	common := []string{"target", r.Target, "runtime", r.Runtime}
	if r.PID > 0 {
		common = append(common, "pid", itoa(r.PID))
	}
	if r.Comm != "" {
		common = append(common, "comm", r.Comm)
	}
	info := append(common, "version", r.Version, "source", r.Source)
	if r.Also != "" {
		info = append(info, "also", r.Also)
	}
	out := []sample.Metric{{Name: Info, Labels: sample.L(info...), Value: 1}}
	for _, v := range r.Values {
		nv := append([]string(nil), common...)
		for _, l := range v.Labels {
			nv = append(nv, l.Name, l.Value)
		}
		out = append(out, sample.Metric{Name: v.Name, Labels: sample.L(nv...), Value: v.Value})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// richness is how many normalised series a reading has: of two readings
// of one process, the one kept.
func (r *Reading) richness() int {
	seen := map[string]bool{}
	for _, v := range r.Values {
		seen[v.Name] = true
	}
	return len(seen)
}

func itoa(n int) string { return strconv.Itoa(n) }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
