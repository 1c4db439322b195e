package diagnose

// gc_time_high: the runtime spends more than 5 % of wall time in GC,
// sustained.
//
// Mechanism (incident 4): a collector that runs too often or too long
// steals the time requests need; pauses queue requests and the slow tail
// grows. Time in GC above 5 % is the usual alert line of the .NET and JVM
// teams (incident 4 kept it); above 20 % the service mostly collects.
//
// Evidence: GC time over wall time (memdoctor_runtime_gc_seconds_total,
// the pause time the runtime reports: JVM collector time, Go's
// stop-the-world pauses, .NET pause time, Node and Ruby GC time) over the
// recent interval or window, and over the process' life.
//
// Fires: the recent share and the lifetime share both above 5 % (a
// window: the whole window and at least two thirds of its parts above 5 %);
// with only one of them known, that one. Critical above 20 %.
//
// Known false positives: a JVM's concurrent collector threads are not
// pauses and are not counted (they cost CPU, not latency); a process just
// started (class loading, warm-up) has a high lifetime share for a while:
// the recent share tells.

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/model"
)

type gcTimeHigh struct{}

func init() { register(gcTimeHigh{}) }

const gcTimeCrit = 0.20

func (gcTimeHigh) Meta() Meta {
	return Meta{ID: "gc_time_high", Title: "time in garbage collection above 5%",
		Needs:     []Need{{model.RTGCSeconds, "expose the runtime's GC metrics and pass the URL with `memdoctor check --scrape URL` (JVMs are read from hsperfdata without configuration)"}},
		Reads:     model.RuntimeSeries,
		Charts:    []string{ChartGCTimeShare, ChartGCCollections},
		Alerts:    gcTimeAlerts,
		Prefilter: &Prefilter{About: "the share of time in GC over the range", Queries: gcTimeQueries, Score: gcTimeScore},
		Doc:       "a language runtime spends more than 5 % of its time in GC pauses, sustained"}
}

func gcTimeAlerts(o AlertOptions) []Alert {
	return []Alert{{Name: "MemdoctorGCTimeHigh", For: "15m", Severity: "warning",
		Expr:    fmt.Sprintf("rate(%s[5m]) > %s", sel(model.RTGCSeconds, o.Match), promNum(model.GCTimeWarn)),
		Summary: fmt.Sprintf("{{ $labels.runtime }} process {{ $labels.target }} spends more than %s%% of its time in garbage collection", promNum(100*model.GCTimeWarn)),
		Runbook: runtimeRunbook("gc_time_high")}}
}

func (gcTimeHigh) Eval(in *Input) []model.Finding {
	if in.Host == nil {
		return nil
	}
	var out []model.Finding
	for i := range in.Host.Runtimes {
		r := &in.Host.Runtimes[i]
		if r.GCSeconds == nil {
			continue
		}
		var recent, life *float64
		if r.Recent != nil {
			recent = r.Recent.GCTimeShare
		}
		if r.Lifetime != nil {
			life = r.Lifetime.GCTimeShare
		}
		if recent == nil && life == nil {
			continue
		}
		share := 0.0
		fire := true
		for _, s := range []*float64{recent, life} {
			if s == nil {
				continue
			}
			share = max(share, *s)
			fire = fire && *s > model.GCTimeWarn
		}
		if recent != nil {
			share = *recent
		}
		if r.Recent != nil && r.Recent.PartsAboveGCThreshold != nil && *r.Recent.PartsAboveGCThreshold < 2.0/3 {
			fire = false
		}
		if !fire {
			continue
		}
		sev := model.Warning
		if share > gcTimeCrit {
			sev = model.Critical
		}
		var evs []model.Evidence
		var words []string
		if recent != nil {
			evs = append(evs, ev("gc_time_percent", 100**recent, "percent"),
				ev("gc_seconds", r.Recent.GCSeconds, "seconds"), ev("interval_seconds", r.Recent.Seconds, "seconds"),
				ev("collections_per_second", r.Recent.Per(r.Recent.Young+r.Recent.Old+r.Recent.Full), "per_second"))
			words = append(words, fmt.Sprintf("%.1f%% %s", 100**recent, spanWords(r.Recent)))
		}
		if life != nil {
			evs = append(evs, ev("lifetime_gc_time_percent", 100**life, "percent"), ev("uptime_seconds", r.UptimeSeconds, "seconds"))
			words = append(words, fmt.Sprintf("%.1f%% since it started", 100**life))
		}
		if r.HeapLiveBytes != nil {
			evs = append(evs, ev("heap_live_bytes", *r.HeapLiveBytes, "bytes"))
		}
		if r.HeapLimitBytes != nil {
			evs = append(evs, ev("heap_limit_bytes", *r.HeapLimitBytes, "bytes"))
		}
		out = append(out, model.Finding{ID: "gc_time_high", Severity: sev, Subject: runtimeSubject(r),
			Summary: fmt.Sprintf("%s spends %.1f%% of its time in garbage collection (%s; alert line 5%%): pauses queue requests",
				runtimeSubject(r), 100*share, strings.Join(words, ", ")),
			Evidence: evs, Remedies: gcTimeRemedies(r)})
	}
	return out
}

func gcTimeRemedies(r *model.Runtime) []model.Remedy {
	common := model.Remedy{Title: "allocate less: find the allocation hot spots (temporary buffers, boxing, string building) with the runtime's allocation profiler",
		Risk: "code change; measure the allocation rate before and after"}
	switch r.Runtime {
	case "go":
		return []model.Remedy{{Title: "let the heap grow before collecting: raise GOGC (default 100) and bound memory with GOMEMLIMIT instead",
			Commands: []string{"GOGC=200 GOMEMLIMIT=<90% of the container limit> <command>"},
			Risk:     "a larger heap between collections: more resident memory"}, common}
	case "jvm":
		return []model.Remedy{{Title: "give the young generation room, or the heap if the live set is near its limit",
			Commands: []string{"java -Xmx<larger> -XX:MaxGCPauseMillis=200 ...", "jstat -gcutil <pid> 1s   # watch occupancy and GC time"},
			Risk:     "more heap is more resident memory; check the host has it"}, common}
	case "dotnet":
		if server, _ := r.ServerGC(); server && r.GCSettings["concurrent"] != "false" {
			return []model.Remedy{{Title: "background Server GC is on already (" + heapsWords(r) + "): give gen0 a larger budget, and cut large temporary arrays (≥ 85,000 bytes go to the large-object heap)",
				Commands: []string{dotnetVar(r, "GCgen0size") + "=<bytes, hex> <command>", "dotnet-counters monitor -p <pid> System.Runtime"},
				Risk:     "a larger gen0 is more memory per heap"}, common}
		}
		return []model.Remedy{{Title: "use background Server GC where cores allow, and cut large temporary arrays (≥ 85,000 bytes go to the large-object heap)",
			Commands: []string{dotnetVar(r, "gcServer") + "=1 " + dotnetVar(r, "gcConcurrent") + "=1 " + dotnetVar(r, "GCgen0size") + "=<bytes, hex> <command>", "dotnet-counters monitor -p <pid> System.Runtime"},
			Risk:     "Server GC uses more memory per core"}, common}
	case "node":
		return []model.Remedy{{Title: "give V8's young generation more room", Commands: []string{"node --max-semi-space-size=64 ..."},
			Risk: "more memory per isolate"}, common}
	case "ruby":
		return []model.Remedy{{Title: "grow Ruby's heap in larger steps so minor GCs run less often",
			Commands: []string{"RUBY_GC_HEAP_GROWTH_FACTOR=1.5 RUBY_GC_MALLOC_LIMIT=64000000 <command>"},
			Risk:     "a larger heap"}, common}
	}
	return []model.Remedy{common}
}

// gcTimeQueries: the largest share of time in GC of an instance's
// runtimes over the range, near the threshold only.
func gcTimeQueries(a PrefilterArgs) []PromQuery {
	return []PromQuery{{"share", byInstance("rate("+sel(model.RTGCSeconds, a.Match)+"["+a.Window()+"])") + " >= " + promNum(model.GCTimeWarn*PrefilterFactor)}}
}

func gcTimeScore(v PrefilterValues) float64 { return v.V("share") / model.GCTimeWarn }
