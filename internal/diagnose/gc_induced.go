package diagnose

// gc_induced: explicit or induced collections are happening.
//
// Mechanism (incident 4): a collection asked for by code or by the host
// (System.gc(), GC.Collect, runtime.GC(), jcmd GC.run, heap dumps, or the
// hosting runtime nearing a memory limit) is usually a full, blocking one:
// the most expensive pause there is, at a time no heuristic chose.
// Incident 4 had 53 induced gen2 collections with no GC.Collect in the
// code: the host's private-memory limit (60 % of RAM by default) induced
// them. Alert on any.
//
// Evidence: induced collections per cause (the runtime's own counter:
// Micrometer's cause label, Go's forced cycles; for a JVM read through
// hsperfdata, check watches the cause of each collection between its two
// readings), their rate, and the likely source of each cause. For .NET
// read through its diagnostics port, the method that called GC.Collect()
// when the stacks of the collections' triggers name one (never a guess:
// a stack that does not resolve names none). A JVM read
// once has only the cause of its last collection: an explicit last cause
// with old collections happening fires too.
//
// Fires: any induced collection in the span judged; warning at ≥ 1 a
// minute, info below.
//
// Known false positives: tools run on purpose (a heap dump taken for a
// diagnosis); RMI's distributed GC calls System.gc() hourly by default
// (info).

import (
	"fmt"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/model"
)

type gcInduced struct{}

func init() { register(gcInduced{}) }

func (gcInduced) Meta() Meta {
	return Meta{ID: "gc_induced", Title: "explicit or induced garbage collections",
		Needs:     []Need{{model.RTInfo, "expose the runtime's GC metrics and pass the URL with `memdoctor check --scrape URL` (JVMs are read from hsperfdata without configuration)"}},
		Reads:     model.RuntimeSeries,
		Charts:    []string{ChartGCTimeShare, ChartGCCollections},
		Alerts:    gcInducedAlerts,
		Prefilter: &Prefilter{About: "induced collections within the range", Queries: gcInducedQueries, Score: gcInducedScore},
		Doc:       "explicit or induced collections (System.gc(), GC.Collect, runtime.GC(), jcmd, heap dumps), rate and likely source"}
}

func gcInducedAlerts(o AlertOptions) []Alert {
	return []Alert{{Name: "MemdoctorInducedGC", For: "0m", Severity: "info",
		Expr:    fmt.Sprintf("increase(%s[1h]) > 0", sel(model.RTInduced, o.Match)),
		Summary: "{{ $labels.runtime }} process {{ $labels.target }} runs explicitly induced collections ({{ $labels.cause }})",
		Runbook: runtimeRunbook("gc_induced")}}
}

// inducedSource names the likely source of an induced collection's cause.
func inducedSource(runtime, cause string) string {
	switch cause {
	case "System.gc()":
		return "code calling System.gc() or Runtime.gc(), or a library doing so: RMI's distributed GC (hourly), NIO direct buffers reaching -XX:MaxDirectMemorySize"
	case "Diagnostic Command":
		return "jcmd <pid> GC.run or a monitoring agent sending it"
	case "Heap Inspection Initiated GC":
		return "jmap -histo:live or jcmd GC.class_histogram"
	case "Heap Dump Initiated GC":
		return "a heap dump (jmap -dump:live, jcmd GC.heap_dump, HeapDumpOnOutOfMemoryError)"
	case "JvmtiEnv ForceGarbageCollection":
		return "a JVMTI agent (profiler, debugger) forcing collections"
	case "runtime.GC()":
		return "code calling runtime.GC() or debug.FreeOSMemory()"
	}
	if runtime == "dotnet" {
		switch {
		case strings.HasPrefix(cause, "GC.Collect()"), strings.HasPrefix(cause, "GC.Collect(compacting)"):
			return "induced by GC.Collect() in the program or a library it uses (its runtime's own count, read through the diagnostics port): each a blocking collection of that generation"
		case strings.HasPrefix(cause, "GC.Collect(Optimized)"):
			return "GC.Collect(..., GCCollectionMode.Optimized) in the program or a library: the runtime ran the ones it judged worth it"
		case strings.HasPrefix(cause, "low-memory notification"):
			return "the runtime's response to the host's or the container's low-memory notification"
		}
		return "GC.Collect in code, or the host nearing its memory limit (GCHeapHardLimit, container limit, IIS private-memory limit)"
	}
	return "code or tools asking for a collection"
}

func (gcInduced) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	var out []model.Finding
	for i := range in.Host.Runtimes {
		r := &in.Host.Runtimes[i]
		g, which := r.Recent, "recent"
		if g == nil || len(g.Induced) == 0 {
			g, which = r.Lifetime, "lifetime"
		}
		var causes map[string]float64
		if g != nil {
			causes = g.Induced
		}
		total := 0.0
		for _, v := range causes {
			total += v
		}
		inferred := false
		if total == 0 && r.Source == "hsperfdata" && explicitCause(r.LastCause) && r.Induced == nil {
			// Only the last cause is known: old collections happening with an
			// explicit last cause.
			rg := r.Recent
			if rg == nil {
				rg = r.Lifetime
			}
			if rg != nil && rg.Old > 0 {
				g, which, inferred = rg, "recent", rg == r.Recent
				if !inferred {
					which = "lifetime"
				}
				causes = map[string]float64{r.LastCause: rg.Old}
				total = rg.Old
				inferred = true
			}
		}
		if total <= 0 || g == nil {
			continue
		}
		perMin := 0.0
		if g.Seconds > 0 {
			perMin = 60 * total / g.Seconds
		}
		sev := model.Info
		if perMin >= 1 {
			sev = model.Warning
		}
		names := make([]string, 0, len(causes))
		for c, v := range causes {
			if v > 0 {
				names = append(names, c)
			}
		}
		sort.Strings(names)
		span := "since it started"
		if which == "recent" {
			span = spanWords(g)
		}
		var parts []string
		evs := []model.Evidence{ev("induced_collections", total, "count"), ev("induced_per_minute", perMin, "per_minute"), evText("span", which)}
		for _, c := range names {
			parts = append(parts, fmt.Sprintf("%.0f × %s", causes[c], c))
			evs = append(evs, model.Evidence{Name: "cause", Value: causes[c], Unit: "count", Text: c + ": " + inducedSource(r.Runtime, c)})
		}
		if g.Old > 0 {
			evs = append(evs, ev("old_collections", g.Old, "count"))
		}
		source := inducedSource(r.Runtime, names[0])
		callers := inducedCallers(r)
		if len(callers) > 0 {
			source = callerPhrase(callers, total)
			for _, c := range callers {
				evs = append(evs, model.Evidence{Name: "caller", Value: min(c.n, total), Unit: "count", Text: c.name})
			}
		}
		summary := fmt.Sprintf("%s had %s induced collections %s (%.1f a minute): %s", runtimeSubject(r), strings.Join(parts, ", "), span, perMin, source)
		if inferred {
			summary += " (inferred: the JVM's last collection cause is explicit and old collections are happening)"
		}
		out = append(out, model.Finding{ID: "gc_induced", Severity: sev, Subject: runtimeSubject(r), Summary: summary,
			Evidence: evs, Remedies: inducedRemedies(r, callers)})
	}
	return out
}

func explicitCause(c string) bool {
	switch c {
	case "System.gc()", "Diagnostic Command", "Heap Inspection Initiated GC", "Heap Dump Initiated GC", "JvmtiEnv ForceGarbageCollection":
		return true
	}
	return false
}

// caller is a method named as the caller of GC.Collect() and how many
// induced collections it asked for.
type caller struct {
	name string
	n    float64
}

// maxCallerName bounds a caller's name shown (the names are the target's
// words).
const maxCallerName = 512

// inducedCallers are a runtime's named callers of GC.Collect(), most
// collections first; names that could not be shown as they are (too
// long, control or invisible characters) are left out.
func inducedCallers(r *model.Runtime) []caller {
	var out []caller
	for n, v := range r.InducedCallers {
		if v > 0 && n != "" && len(n) <= maxCallerName && model.Printable(n) && !strings.ContainsAny(n, " \t") {
			out = append(out, caller{n, v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].name < out[j].name
	})
	return out
}

// callerPhrase says who called GC.Collect(): "induced by GC.Collect()
// called from Acme.Cache.Flush (20 of 20 induced collections)".
func callerPhrase(callers []caller, total float64) string {
	var parts []string
	for _, c := range callers {
		p := fmt.Sprintf("%s (%.0f of %.0f induced collections)", c.name, min(c.n, total), total)
		if strings.HasPrefix(c.name, "Python.Runtime.") {
			p += ", pythonnet's bridge: the call came from Python code hosting the runtime (or from a method it called whose last call this was)"
		}
		parts = append(parts, p)
	}
	return "induced by GC.Collect() called from " + strings.Join(parts, "; ") + ": each a blocking collection of that generation"
}

func inducedRemedies(r *model.Runtime, callers []caller) []model.Remedy {
	switch r.Runtime {
	case "jvm":
		return []model.Remedy{
			{Title: "find the caller", Commands: []string{"java -Xlog:gc*:file=gc.log ...   # causes per collection", "jcmd <pid> Thread.print   # while it happens; or async-profiler -e java.lang.System.gc"},
				Risk: "logging only"},
			{Title: "make explicit collections concurrent (G1, ZGC, Shenandoah) instead of full stop-the-world ones",
				Commands: []string{"java -XX:+ExplicitGCInvokesConcurrent ..."}, Risk: "code that relies on System.gc() freeing direct buffers at once waits for the concurrent cycle"},
			{Title: "or ignore them", Commands: []string{"java -XX:+DisableExplicitGC ..."},
				Risk: "NIO direct-buffer allocation relies on System.gc() to free unreachable buffers: OutOfMemoryError: Direct buffer memory becomes possible"},
		}
	case "dotnet":
		title := "remove GC.Collect calls; if the host induces them near its memory limit, raise the limit or lower the heap"
		switch {
		case len(callers) > 0 && strings.HasPrefix(callers[0].name, "Python.Runtime."):
			title = "remove the GC.Collect() calls the Python code makes through pythonnet; if the host induces collections near its memory limit, raise the limit or lower the heap"
		case len(callers) > 0:
			title = "remove the GC.Collect() call in " + callers[0].name + " (the program's or that of the library it belongs to); if the host induces collections near its memory limit, raise the limit or lower the heap"
		}
		return []model.Remedy{
			{Title: title,
				Commands: []string{"dotnet-trace collect -p <pid> --profile gc-collect   # GC reasons (Induced, LowMemory)", dotnetVar(r, "GCHeapHardLimitPercent") + "=0x50 <command>   # 80% (hex)"},
				Risk:     "a higher limit lets the process use more memory before it is stopped"},
		}
	case "go":
		return []model.Remedy{{Title: "remove runtime.GC()/debug.FreeOSMemory() calls from hot paths; bound memory with GOMEMLIMIT instead",
			Commands: []string{"grep -rn 'runtime.GC()\\|FreeOSMemory' ."}, Risk: "code change"}}
	}
	return []model.Remedy{{Title: "find and remove the code asking for collections (or run it only when the latency cost is acceptable)",
		Risk: "code change"}}
}

// gcInducedQueries: induced collections within the range (any is a
// finding).
func gcInducedQueries(a PrefilterArgs) []PromQuery {
	return []PromQuery{{"induced", byInstance("increase("+sel(model.RTInduced, a.Match)+"["+a.Window()+"])") + " > 0"}}
}

func gcInducedScore(v PrefilterValues) float64 { return v.V("induced") }
