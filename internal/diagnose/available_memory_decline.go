package diagnose

// available_memory_decline: available memory falls steadily.
//
// Mechanism: something accumulates — anon memory of a leaking or hoarding
// process, unreclaimable slab, shmem/tmpfs files, page tables — and each
// byte of it is a byte less the kernel can hand out. The capacity of the
// host shrinks until it swaps, thrashes or OOM-kills (incident 1: games per
// server fell for months while per-game memory stayed flat).
//
// Method: within the newest boot (no fit across reboots), over two days or
// more the daily cycle is removed (a 24- and a 12-hour harmonic fitted
// together with the line), then a Theil–Sen slope of MemAvailable and a
// Mann–Kendall test for a monotonic trend whose variance is corrected for
// the autocorrelation of the samples (Hamed & Rao; fitTrend in trend.go:
// memory wanders for hours, so neighbouring samples are not independent
// evidence); the categories whose own slopes grew explain the decline.
//
// Fires: a significant decline (p < 0.01) of at least 2 % of MemTotal over
// the window, with 95 % confidence (the end of the slope's 90 % interval
// nearer zero, as wide as the corrected test makes it, still drops 2 %;
// fit.Limit), that would exhaust what is available within 90 days;
// warning within 30 days, critical within 7, info otherwise. Needs 6 hours
// and 12 points of data in the newest boot; less gives a note.
//
// Known false positives: a cache-heavy host whose working set legitimately
// grows (a database warming up); the attribution names anon or page cache
// and the decline flattens when the working set is reached. In the first 3
// days after a boot (the segment starts at node_boot_time_seconds) nothing
// is judged: that fill-up is the rule, not the exception. Just past those
// days, a healthy host whose memory wandered 2 % of MemTotal over the boot
// on noise alone passed the test (the correction estimates the wander from
// the same few days and underrates it) and was named when the fitted drop
// passed 2 %: 9 of 3,732 generated healthy hosts booted 3 to 7 days before
// the end. Asking the drop to pass 2 % with confidence names none of them
// (internal/fleettest's TestHealthyHostsRebootedDaysAgoRarelyFlagged).
//
// Known false negatives: a decline just past the threshold is named a day
// or so later than the fitted drop alone would: a leak of 1 % of MemTotal
// a day, 3.5 days after a boot, on 85 of 120 generated hosts (111 on the
// fitted drop alone), 4.5 days after on 117 (120).

import (
	"fmt"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/promql"
)

// The rule fires on a drop of at least this share of MemTotal over the
// window, exhausting memory within declineMaxDays.
const (
	declineMinDropShare = 0.02
	declineMaxDays      = 90
)

type availableMemoryDecline struct{}

func init() { register(availableMemoryDecline{}) }

// memoryCategories are the meminfo series whose growth can explain a
// decline of MemAvailable, with the names the report uses.
var memoryCategories = []struct{ name, series string }{
	{"anon", "node_memory_AnonPages_bytes"},
	{"shmem", "node_memory_Shmem_bytes"},
	{"slab_unreclaimable", "node_memory_SUnreclaim_bytes"},
	{"kernel_stack", "node_memory_KernelStack_bytes"},
	{"page_tables", "node_memory_PageTables_bytes"},
	{"percpu", "node_memory_Percpu_bytes"},
	{"hugepages", "node_memory_Hugetlb_bytes"},
	{"vmalloc", "node_memory_VmallocUsed_bytes"},
	{"mlocked", "node_memory_Mlocked_bytes"},
}

// declineQueries: available memory now, and its slope per day over the
// range and over its newer half alone (for a host rebooted in the older).
func declineQueries(a PrefilterArgs) []PromQuery {
	av := sel("node_memory_MemAvailable_bytes", a.Match)
	return []PromQuery{
		{"last", byInstance("last_over_time(" + av + "[" + a.Window() + "])")},
		{"slope", byInstance("deriv(" + av + "[" + a.Window() + "]) * 86400")},
		{"slope_half", byInstance("deriv(" + av + "[" + promql.Duration(a.Range/2) + "]) * 86400")},
	}
}

// declineScore: the fall over the range against the smallest drop, or the
// days until exhausted against the longest horizon, whichever is nearer.
func declineScore(v PrefilterValues) float64 {
	fall := -min(v.V("slope"), v.V("slope_half"))
	if fall <= 0 {
		return 0
	}
	left := v.V("last") / fall
	return min(fall*v.Days/(declineMinDropShare*v.Total), declineMaxDays/max(left, 1e-9))
}

func (availableMemoryDecline) Meta() Meta {
	reads := []string{"node_memory_MemTotal_bytes", "node_boot_time_seconds"}
	for _, c := range memoryCategories {
		reads = append(reads, c.series)
	}
	return Meta{ID: "available_memory_decline", Trend: true, Title: "available memory declining over time",
		Needs:     []Need{{"node_memory_MemAvailable_bytes", "record /proc/meminfo over time (memdoctor record, or node_exporter's meminfo collector)"}, {"node_memory_MemTotal_bytes", "record /proc/meminfo over time"}},
		Reads:     reads,
		Charts:    []string{ChartMemoryCategories},
		Prefilter: &Prefilter{About: "MemAvailable now and its slope per day, over the range and its newer half", Queries: declineQueries, Score: declineScore},
		Doc:       "MemAvailable falls steadily; days until exhausted; which categories grew"}
}

func (availableMemoryDecline) Eval(in *Input) []model.Finding {
	w := in.Window
	if w == nil {
		return nil
	}
	if !windowUsable(in, "available_memory_decline", "node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes") {
		return nil
	}
	seg := model.LastSegment(w)
	avail := model.Within(w.Get("node_memory_MemAvailable_bytes"), seg)
	if len(avail) < declineMinPoints || time.Duration(avail[len(avail)-1].T-avail[0].T)*time.Millisecond < declineMinSpan {
		in.Note("available_memory_decline", fmt.Sprintf("%d samples over %s since the last boot: too little to fit a trend (needs %v and %d samples)",
			len(avail), spanText(avail), declineMinSpan, declineMinPoints), "record longer")
		return nil
	}
	f := fitTrend(avail)
	if !f.OK || f.P >= 0.01 || f.Slope >= 0 {
		return nil
	}
	if since, ok := model.BootedAt(w, seg); ok && since < model.WarmUp {
		in.Note("available_memory_decline", fmt.Sprintf("available memory falls %s a day, but the host booted %s ago: caches and pools fill after a boot, so this is judged once %v have passed",
			format.Bytes(int64(-f.Slope)), spanText(avail), model.WarmUp), "wait, or record longer")
		return nil
	}
	total := lastValue(w.Get("node_memory_MemTotal_bytes"))
	last := avail[len(avail)-1].V
	drop := -f.Slope * model.Span{From: avail[0].T, To: avail[len(avail)-1].T}.Days()
	if total <= 0 || drop < declineMinDropShare*total {
		return nil
	}
	// The drop must stand out from the noise by the threshold, not only
	// from zero: the 90 % interval's end nearer zero still drops that much.
	limit, ok := f.Limit()
	least := -limit * model.Span{From: avail[0].T, To: avail[len(avail)-1].T}.Days()
	if !ok || least < declineMinDropShare*total {
		return nil
	}
	days := last / -f.Slope
	var sev model.Severity
	switch {
	case days <= 7:
		sev = model.Critical
	case days <= 30:
		sev = model.Warning
	case days <= declineMaxDays:
		sev = model.Info
	default:
		return nil
	}
	fd := model.Finding{ID: "available_memory_decline", Severity: sev, Subject: subject(w, "host"),
		Summary: fmt.Sprintf("available memory falls %s per day (p=%s over %s); %s left, exhausted in about %s",
			format.Bytes(int64(-f.Slope)), format.Number(f.P), spanText(avail), format.Bytes(int64(last)), format.Count(days, "day", "days")),
		Evidence: []model.Evidence{
			ev("mem_available_slope_bytes_per_day", f.Slope, "bytes_per_day"),
			ev("mem_available_slope_limit_bytes_per_day", limit, "bytes_per_day"),
			ev("mann_kendall_p", f.P, ""),
			ev("mem_available_bytes", last, "bytes"),
			ev("mem_total_bytes", total, "bytes"),
			ev("days_until_exhausted", days, "days"),
			ev("window_days", model.Span{From: avail[0].T, To: avail[len(avail)-1].T}.Days(), "days"),
		},
	}
	type growth struct {
		name  string
		slope float64
	}
	var grew []growth
	for _, c := range memoryCategories {
		ps := model.Within(w.Get(c.series), seg)
		if len(ps) < declineMinPoints {
			continue
		}
		if g := fitTrend(ps); g.OK && g.P < 0.01 && g.Slope > 0.1*-f.Slope {
			grew = append(grew, growth{c.name, g.Slope})
		}
	}
	sort.Slice(grew, func(i, j int) bool { return grew[i].slope > grew[j].slope })
	for _, g := range grew {
		fd.Evidence = append(fd.Evidence, ev(g.name+"_growth_bytes_per_day", g.slope, "bytes_per_day"))
	}
	if len(grew) == 0 {
		fd.Evidence = append(fd.Evidence, evText("cause", "no single meminfo category explains it: look at the unexplained rest (drivers, vmalloc, network buffers)"))
	} else {
		fd.Summary += "; growing: " + grew[0].name
	}
	fd.Remedies = []model.Remedy{
		{Title: "find the growth in the recording: diagnose names the growing processes, slab caches and cgroups",
			Commands: []string{"memdoctor diagnose --from SRC --json | jq '.findings[] | select(.id != \"available_memory_decline\")'"},
			Risk:     "none (read-only)"},
		{Title: "see where the memory is now",
			Commands: []string{"memdoctor check --top 20"},
			Risk:     "none (read-only)"},
	}
	return []model.Finding{fd}
}
