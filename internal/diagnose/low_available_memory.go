package diagnose

// low_available_memory: the host is close to running out of memory.
//
// Mechanism: MemAvailable estimates what can be allocated without swapping
// (free above the reserves plus the reclaimable part of page cache and
// slab). When it runs low, reclaim has little left to take, allocations
// stall in direct reclaim and the OOM killer is next.
//
// Thresholds: warning below 10 % of MemTotal, critical below 5 %. The same
// levels most alerting guides use for "memory used"; anything higher is
// normal on a host whose cache fills RAM.
//
// Known false positives: hosts that reserve most memory on purpose
// (hugepages for a database, a VM host's guests) — the category table shows
// hugepages and the rule says so.

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type lowAvailableMemory struct{}

func init() { register(lowAvailableMemory{}) }

func (lowAvailableMemory) Meta() Meta {
	return Meta{ID: "low_available_memory", Title: "available memory running out",
		Needs:     []Need{{"node_memory_MemTotal_bytes", "read /proc/meminfo"}},
		Charts:    []string{ChartMemoryCategories},
		Prefilter: &Prefilter{About: "the latest MemAvailable against MemTotal", Queries: lowAvailQueries, Score: lowAvailScore},
		Doc:       "MemAvailable under 10 % (critical under 5 %)"}
}

func (lowAvailableMemory) Eval(in *Input) []model.Finding {
	if !memoryUsable(in, "low_available_memory", true) {
		return nil
	}
	h := in.Host
	a := h.Accounting
	availPct := 100 * float64(a.AvailableBytes) / float64(a.TotalBytes)
	var sev model.Severity
	switch {
	case availPct < lowAvailCritPct:
		sev = model.Critical
	case availPct < lowAvailWarnPct:
		sev = model.Warning
	default:
		return nil
	}
	f := model.Finding{ID: "low_available_memory", Severity: sev, Subject: "host",
		Summary: fmt.Sprintf("only %s of %s available (%.1f%% used); free alone (%s) would mislead either way",
			format.Bytes(a.AvailableBytes), format.Bytes(a.TotalBytes), a.UsedPercent, format.Bytes(a.FreeBytes)),
		Evidence: []model.Evidence{
			ev("mem_total_bytes", float64(a.TotalBytes), "bytes"),
			ev("mem_available_bytes", float64(a.AvailableBytes), "bytes"),
			ev("used_percent", a.UsedPercent, "percent"),
		},
	}
	// The three biggest non-free categories say where it went.
	cats := append([]model.Category(nil), a.Categories...)
	for i := range cats {
		for j := i + 1; j < len(cats); j++ {
			if cats[j].Bytes > cats[i].Bytes {
				cats[i], cats[j] = cats[j], cats[i]
			}
		}
	}
	n := 0
	for _, c := range cats {
		if c.Name == "free" || n == 3 {
			continue
		}
		f.Evidence = append(f.Evidence, ev(c.Name+"_bytes", float64(c.Bytes), "bytes"))
		n++
	}
	if len(h.Processes) > 0 {
		p := h.Processes[0]
		f.Evidence = append(f.Evidence, evText("largest_process", fmt.Sprintf("%s (pid %d) %s", p.Comm, p.PID, format.Bytes(model.RankOf(p)))))
	}
	if h.Reclaim.PSISomeAvg60 >= 0 {
		f.Evidence = append(f.Evidence, ev("psi_memory_some_avg60_percent", h.Reclaim.PSISomeAvg60, "percent"))
	}
	if hp := a.Category("hugepages"); hp > a.TotalBytes/4 {
		f.Evidence = append(f.Evidence, evText("note", "hugepages reserve "+format.Bytes(hp)+": intended for an application, not a leak"))
	}
	f.Remedies = []model.Remedy{
		{Title: "find what grew: the largest processes and cgroups by PSS",
			Commands: []string{"memdoctor check --top 20", "memdoctor check --json | jq '.processes[:5], .cgroups.top[:5]'"},
			Risk:     "none (read-only)"},
		{Title: "save the evidence before anything restarts",
			Commands: []string{"memdoctor capture -o memdoctor-$(hostname)-$(date +%s).txtar"},
			Risk:     "none (read-only; command lines are redacted)"},
	}
	return []model.Finding{f}
}

// Available memory in percent of MemTotal below which the rule warns, and
// below which it is critical.
const (
	lowAvailWarnPct = 10
	lowAvailCritPct = 5
)

// lowAvailQueries: the latest available share, for the instances near the
// threshold only.
func lowAvailQueries(a PrefilterArgs) []PromQuery {
	return []PromQuery{{"percent", lastPercentOfTotal("node_memory_MemAvailable_bytes", a) + " < " + promNum(lowAvailWarnPct/PrefilterFactor)}}
}

func lowAvailScore(v PrefilterValues) float64 {
	if !v.Has("percent") {
		return 0
	}
	return lowAvailWarnPct / max(v.V("percent"), 1e-9)
}
