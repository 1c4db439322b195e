package runtimes

// Normalize maps the names of each runtime's usual Prometheus client onto
// the normalised series. Which runtime a page belongs to is told by its
// names (JVM first, then .NET, Node, Ruby, Python, Go: exporters written in
// Go describe their own Go runtime too, so Go comes last).
//
//	normalised          Go (client_golang)                        Python (prometheus_client)
//	gc_seconds          go_cpu_classes_gc_total_cpu_seconds_total / go_sched_gomaxprocs_threads, else go_gc_duration_seconds_sum (STW pauses)   -
//	collections         go_gc_duration_seconds_count {full}       python_gc_collections_total gen 0+1 young, 2 old
//	collected_objects   -                                         python_gc_objects_collected_total gen 0+1 young, 2 old
//	induced             go_gc_cycles_forced_gc_cycles_total       -
//	heap_live           go_gc_heap_live_bytes, else next_gc/(1+GOGC/100), else heap_alloc
//	heap_committed      go_memstats_heap_sys - heap_released      -
//	heap_limit          go_gc_gomemlimit_bytes (when set)         -
//
//	JVM                 Micrometer jvm_gc_pause_seconds{action,cause,gc} (minor → young,
//	                    major → old, explicit causes → induced); client_java
//	                    jvm_gc_collection_seconds{gc} (by collector name);
//	                    heap: jvm_memory_used|committed|max_bytes{area="heap"} (1.x, Micrometer)
//	                    or jvm_memory_bytes_used|committed|max{area="heap"} (0.x);
//	                    live: jvm_gc_live_data_size_bytes when present;
//	                    jvm_gc_memory_promoted|allocated_bytes_total (Micrometer)
//	.NET                prometheus-net dotnet_collection_count_total{generation 0,1 young; 2 old},
//	                    dotnet_total_memory_bytes (live), system_runtime_loh_size;
//	                    OpenTelemetry 6-8 process_runtime_dotnet_gc_*; .NET 9+ dotnet_gc_*
//	Ruby                ruby_gc_stat_minor_gc_count (young), _major_gc_count (old),
//	                    _time (ms), heap_live_slots × 40 B, heap_available_slots × 40 B
//	                    (else heap_allocated_pages × 16 KiB); gc_pending:
//	                    oldmalloc_increase_bytes, its _limit
//	Node                nodejs_gc_duration_seconds{kind minor → young, major → old} (sum: time),
//	                    nodejs_heap_size_used_bytes (live), nodejs_heap_size_total_bytes
//	everyone            process_resident_memory_bytes (or process_working_set_bytes),
//	                    process_start_time_seconds

import (
	"math"
	"strings"
)

type page = Page

// valueOf is a plain member's value; summaries and histograms have none.
func (f *family) valueOf(m *member) float64 {
	if f.kind != plainFamily {
		return math.NaN()
	}
	return m.value
}

// each calls fn for every sample of a plain series.
func (p page) each(name string, fn func(l map[string]string, v float64)) {
	f := p[name]
	if f == nil {
		return
	}
	for _, m := range f.members {
		// NaN (no value) and infinities (a broken exporter) are no count,
		// size or duration: skipped, never judged.
		if v := f.valueOf(m); !math.IsNaN(v) && !math.IsInf(v, 0) {
			fn(m.labels, v)
		}
	}
}

// has says whether any of the names is on the page.
func (p page) has(names ...string) bool {
	for _, n := range names {
		if p[n] != nil {
			return true
		}
	}
	return false
}

// sum adds every sample of a name whose labels pass keep (nil: all).
func (p page) sum(name string, keep func(map[string]string) bool) (float64, bool) {
	var s float64
	found := false
	p.each(name, func(l map[string]string, v float64) {
		if keep == nil || keep(l) {
			s += v
			found = true
		}
	})
	return s, found
}

// countSum reads a summary or histogram's count and sum per sample, also
// when the page declared no type (then name_count and name_sum are plain).
func (p page) countSum(name string, fn func(l map[string]string, count, sum float64)) {
	if f := p[name]; f != nil {
		if f.kind != plainFamily {
			for _, m := range f.members {
				fn(m.labels, m.count, m.sum)
			}
		}
		return
	}
	sums := map[string]float64{}
	p.each(name+"_sum", func(l map[string]string, v float64) { sums[key(l)] = v })
	p.each(name+"_count", func(l map[string]string, v float64) { fn(l, v, sums[key(l)]) })
}

func key(l map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(l) {
		b.WriteString(k + "=" + l[k] + ",")
	}
	return b.String()
}

func heapArea(l map[string]string) bool { return l["area"] == "heap" }

// Normalize maps a scraped page onto the normalised series. It returns
// false when no runtime's names are on the page.
func Normalize(p Page, target string) (*Reading, bool) {
	r := &Reading{Target: target, Source: "scrape"}
	switch {
	case p.has("jvm_gc_pause_seconds", "jvm_gc_pause_seconds_count", "jvm_gc_collection_seconds", "jvm_gc_collection_seconds_count",
		"jvm_memory_used_bytes", "jvm_memory_bytes_used"):
		r.Runtime = JVM
		jvmPage(p, r)
	case p.has("dotnet_collection_count_total", "process_runtime_dotnet_gc_collections_count_total", "dotnet_gc_collections_total"):
		r.Runtime = DotNet
		dotnetPage(p, r)
	case p.has("nodejs_gc_duration_seconds", "nodejs_heap_size_used_bytes", "nodejs_version_info"):
		r.Runtime = Node
		nodePage(p, r)
	case p.has("ruby_gc_stat_count", "ruby_gc_stat_major_gc_count", "ruby_gc_duration_seconds"):
		r.Runtime = Ruby
		rubyPage(p, r)
	case p.has("python_gc_collections_total", "python_info"):
		r.Runtime = Python
		pythonPage(p, r)
	case p.has("go_gc_duration_seconds", "go_gc_duration_seconds_count", "go_memstats_heap_alloc_bytes", "go_info"):
		r.Runtime = Go
		goPage(p, r)
	default:
		return nil, false
	}
	if v, ok := p.sum("process_resident_memory_bytes", nil); ok {
		r.add(Resident, v)
	} else if v, ok := p.sum("process_working_set_bytes", nil); ok {
		r.add(Resident, v)
	} else if v, ok := p.sum("ruby_process_resident_memory_bytes", nil); ok {
		r.add(Resident, v)
	} else if v, ok := p.sum("dotnet_process_memory_working_set_bytes", nil); ok {
		r.add(Resident, v)
	}
	if v, ok := p.sum("process_start_time_seconds", nil); ok && v > 0 {
		r.add(StartTime, v)
	} else if v, ok := p.sum("ruby_process_start_time_seconds", nil); ok && v > 0 {
		r.add(StartTime, v)
	}
	return r, true
}

func goPage(p page, r *Reading) {
	p.each("go_info", func(l map[string]string, _ float64) { r.Version = l["version"] })
	// GC time: the collector's CPU time over all the program's Ps, where
	// the runtime's metrics are exported (Go collects concurrently: its
	// cost is CPU, of which the stop-the-world pauses are a small part);
	// otherwise the pauses.
	gcCPU, hasCPU := p.sum("go_cpu_classes_gc_total_cpu_seconds_total", nil)
	procs, _ := p.sum("go_sched_gomaxprocs_threads", nil)
	byCPU := hasCPU && procs > 0
	p.countSum("go_gc_duration_seconds", func(_ map[string]string, c, s float64) {
		if !byCPU {
			r.add(GCSeconds, s)
		}
		r.add(Collections, c, "generation", Full)
	})
	if byCPU {
		r.add(GCSeconds, gcCPU/procs)
	}
	if v, ok := p.sum("go_gc_cycles_forced_gc_cycles_total", nil); ok {
		r.add(Induced, v, "cause", "runtime.GC()")
	}
	gogc, hasGOGC := p.sum("go_gc_gogc_percent", nil)
	switch {
	case p.has("go_gc_heap_live_bytes"):
		v, _ := p.sum("go_gc_heap_live_bytes", nil)
		r.add(HeapLive, v)
	case hasGOGC && gogc > 0 && p.has("go_memstats_next_gc_bytes"):
		v, _ := p.sum("go_memstats_next_gc_bytes", nil)
		r.add(HeapLive, v/(1+gogc/100))
	case p.has("go_memstats_heap_alloc_bytes"):
		v, _ := p.sum("go_memstats_heap_alloc_bytes", nil)
		r.add(HeapLive, v)
	}
	if sys, ok := p.sum("go_memstats_heap_sys_bytes", nil); ok {
		rel, _ := p.sum("go_memstats_heap_released_bytes", nil)
		r.add(HeapCommitted, sys-rel)
	}
	if v, ok := p.sum("go_gc_gomemlimit_bytes", nil); ok && v > 0 && v < math.MaxInt64/2 {
		r.add(HeapLimit, v)
	}
}

func pythonPage(p page, r *Reading) {
	p.each("python_info", func(l map[string]string, _ float64) { r.Version = l["version"] })
	var young, old float64
	found := false
	p.each("python_gc_collections_total", func(l map[string]string, v float64) {
		found = true
		if l["generation"] == "2" {
			old += v
		} else {
			young += v
		}
	})
	if found {
		r.add(Collections, young, "generation", Young)
		r.add(Collections, old, "generation", Old)
	}
	young, old, found = 0, 0, false
	p.each("python_gc_objects_collected_total", func(l map[string]string, v float64) {
		found = true
		if l["generation"] == "2" {
			old += v
		} else {
			young += v
		}
	})
	if found {
		r.add(CollectedObjects, young, "generation", Young)
		r.add(CollectedObjects, old, "generation", Old)
	}
}

// jvmYoung classes a JVM collector (client_java's gc label) by name.
func jvmYoung(gc string) (young, ok bool) {
	n := strings.ToLower(gc)
	switch {
	case strings.Contains(n, "young"), strings.Contains(n, "scavenge"), strings.Contains(n, "copy"),
		strings.Contains(n, "parnew"), strings.Contains(n, "minor"):
		return true, true
	case strings.Contains(n, "old"), strings.Contains(n, "marksweep"), strings.Contains(n, "compact"),
		strings.Contains(n, "major"), strings.Contains(n, "concurrent"), strings.Contains(n, "full"):
		return false, true
	}
	return false, false
}

func jvmPage(p page, r *Reading) {
	var young, old, secs float64
	induced := map[string]float64{}
	seen := false
	pauses := p.has("jvm_gc_pause_seconds", "jvm_gc_pause_seconds_count")
	if pauses { // Micrometer
		p.countSum("jvm_gc_pause_seconds", func(l map[string]string, c, s float64) {
			seen = true
			secs += s
			switch a := l["action"]; {
			case strings.Contains(a, "minor"):
				young += c
			case strings.Contains(a, "major"):
				old += c
			default:
				if y, ok := jvmYoung(l["gc"]); ok && y {
					young += c
				} else if ok {
					old += c
				}
			}
			if ExplicitJVMCause(l["cause"]) {
				induced[l["cause"]] += c
			}
		})
	} else { // client_java
		p.countSum("jvm_gc_collection_seconds", func(l map[string]string, c, s float64) {
			seen = true
			secs += s
			if y, ok := jvmYoung(l["gc"]); ok && y {
				young += c
			} else if ok {
				old += c
			}
		})
	}
	if seen {
		r.add(GCSeconds, secs)
		r.add(Collections, young, "generation", Young)
		r.add(Collections, old, "generation", Old)
	}
	for c, v := range induced {
		r.add(Induced, v, "cause", c)
	}
	if pauses && len(induced) == 0 && seen {
		r.add(Induced, 0, "cause", "System.gc()")
	}
	if v, ok := p.sum("jvm_gc_memory_promoted_bytes_total", nil); ok {
		r.add(Promoted, v)
	}
	if v, ok := p.sum("jvm_gc_memory_allocated_bytes_total", nil); ok {
		r.add(Allocated, v)
	}
	used, ok := p.sum("jvm_memory_used_bytes", heapArea)
	if !ok {
		used, ok = p.sum("jvm_memory_bytes_used", heapArea)
	}
	if live, lok := p.sum("jvm_gc_live_data_size_bytes", nil); lok && live > 0 {
		r.add(HeapLive, live)
	} else if ok {
		r.add(HeapLive, used)
	}
	if v, ok := p.sum("jvm_memory_committed_bytes", heapArea); ok {
		r.add(HeapCommitted, v)
	} else if v, ok := p.sum("jvm_memory_bytes_committed", heapArea); ok {
		r.add(HeapCommitted, v)
	}
	positive := func(l map[string]string) bool { return heapArea(l) }
	var limit float64
	for _, n := range []string{"jvm_memory_max_bytes", "jvm_memory_bytes_max"} {
		p.each(n, func(l map[string]string, v float64) {
			if positive(l) && v > 0 {
				limit = max(limit, v) // G1 pools each report the whole heap
			}
		})
	}
	if limit > 0 {
		r.add(HeapLimit, limit)
	}
	if v, ok := p.sum("jvm_memory_used_bytes", func(l map[string]string) bool {
		return heapArea(l) && strings.Contains(strings.ToLower(l["id"]), "humongous")
	}); ok {
		r.add(LargeObjects, v)
	}
}

func dotnetGen(g string) string {
	g = strings.TrimPrefix(strings.ToLower(g), "gen")
	switch g {
	case "0", "1":
		return Young
	case "2":
		return Old
	}
	return ""
}

func dotnetPage(p page, r *Reading) {
	var young, old float64
	found := false
	for _, n := range []struct{ name, label string }{
		{"dotnet_collection_count_total", "generation"},
		{"process_runtime_dotnet_gc_collections_count_total", "generation"},
		{"dotnet_gc_collections_total", "gc_heap_generation"},
	} {
		p.each(n.name, func(l map[string]string, v float64) {
			found = true
			switch dotnetGen(l[n.label]) {
			case Young:
				young += v
			case Old:
				old += v
			}
		})
		if found {
			break
		}
	}
	if found {
		r.add(Collections, young, "generation", Young)
		r.add(Collections, old, "generation", Old)
	}
	if v, ok := p.sum("dotnet_gc_pause_time_seconds_total", nil); ok {
		r.add(GCSeconds, v)
	} else if v, ok := p.sum("process_runtime_dotnet_gc_duration_nanoseconds_total", nil); ok {
		r.add(GCSeconds, v/1e9)
	}
	switch {
	case p.has("dotnet_total_memory_bytes"):
		v, _ := p.sum("dotnet_total_memory_bytes", nil)
		r.add(HeapLive, v)
	case p.has("process_runtime_dotnet_gc_heap_size_bytes"):
		v, _ := p.sum("process_runtime_dotnet_gc_heap_size_bytes", nil)
		r.add(HeapLive, v)
	case p.has("dotnet_gc_last_collection_heap_size_bytes"):
		v, _ := p.sum("dotnet_gc_last_collection_heap_size_bytes", nil)
		r.add(HeapLive, v)
	}
	if v, ok := p.sum("process_runtime_dotnet_gc_committed_memory_size_bytes", nil); ok {
		r.add(HeapCommitted, v)
	} else if v, ok := p.sum("dotnet_gc_last_collection_memory_committed_size_bytes", nil); ok {
		r.add(HeapCommitted, v)
	}
	if v, ok := p.sum("system_runtime_loh_size", nil); ok {
		r.add(LargeObjects, v)
	} else if v, ok := p.sum("process_runtime_dotnet_gc_heap_size_bytes", func(l map[string]string) bool { return l["generation"] == "loh" }); ok {
		r.add(LargeObjects, v)
	} else if v, ok := p.sum("dotnet_gc_last_collection_heap_size_bytes", func(l map[string]string) bool { return l["gc_heap_generation"] == "loh" }); ok {
		r.add(LargeObjects, v)
	}
}

// Ruby's object slot (RVALUE) is 40 bytes on 64-bit builds. The heap's
// capacity is taken as its slots (heap_available_slots) in the same unit as
// the live ones, so the two compare whatever the page size; the page count
// is the fallback, at 16 KiB a page (409 slots: GC::INTERNAL_CONSTANTS of
// Ruby 3.1; other versions may use other page sizes).
const (
	rubySlotBytes = 40
	rubyPageBytes = 16 << 10
)

func rubyPage(p page, r *Reading) {
	if v, ok := p.sum("ruby_gc_stat_minor_gc_count", nil); ok {
		r.add(Collections, v, "generation", Young)
	}
	if v, ok := p.sum("ruby_gc_stat_major_gc_count", nil); ok {
		r.add(Collections, v, "generation", Old)
	}
	if v, ok := p.sum("ruby_gc_stat_time", nil); ok {
		r.add(GCSeconds, v/1000)
	} else {
		p.countSum("ruby_gc_duration_seconds", func(_ map[string]string, _, s float64) { r.add(GCSeconds, s) })
	}
	if v, ok := p.sum("ruby_gc_stat_heap_live_slots", nil); ok {
		r.add(HeapLive, v*rubySlotBytes)
	}
	if v, ok := p.sum("ruby_gc_stat_heap_available_slots", nil); ok {
		r.add(HeapCommitted, v*rubySlotBytes)
	} else if v, ok := p.sum("ruby_gc_stat_heap_allocated_pages", nil); ok {
		r.add(HeapCommitted, v*rubyPageBytes)
	}
	// The object slots miss most of a Ruby heap's garbage: string and array
	// bodies are malloc'd outside them, and dead objects count as live
	// until swept. oldmalloc_increase_bytes counts the bytes malloc'd less
	// those freed since the last major GC (minor GCs subtract what they
	// free; only a major GC resets it), and a minor GC that finds it above
	// oldmalloc_increase_bytes_limit makes the next GC a major one.
	if v, ok := p.sum("ruby_gc_stat_oldmalloc_increase_bytes", nil); ok {
		r.add(GCPending, v)
	}
	if v, ok := p.sum("ruby_gc_stat_oldmalloc_increase_bytes_limit", nil); ok {
		r.add(GCPendingLimit, v)
	}
}

func nodePage(p page, r *Reading) {
	p.each("nodejs_version_info", func(l map[string]string, _ float64) { r.Version = l["version"] })
	var young, old, secs float64
	found := false
	p.countSum("nodejs_gc_duration_seconds", func(l map[string]string, c, s float64) {
		found = true
		secs += s
		switch l["kind"] {
		case "minor":
			young += c
		case "major":
			old += c
		}
	})
	if found {
		r.add(GCSeconds, secs)
		r.add(Collections, young, "generation", Young)
		r.add(Collections, old, "generation", Old)
	}
	if v, ok := p.sum("nodejs_heap_size_used_bytes", nil); ok {
		r.add(HeapLive, v)
	}
	if v, ok := p.sum("nodejs_heap_size_total_bytes", nil); ok {
		r.add(HeapCommitted, v)
	}
}
