package diagnose

// process_memory_growth: a process whose own memory keeps growing.
//
// Mechanism: either a leak (the program keeps references to memory it no
// longer needs: its live heap grows) or retention (the program frees, but
// the allocator or runtime keeps the pages: glibc arenas in incident 5, a
// garbage collector that rarely runs in incident 2). From outside, both
// look like growing USS/anon; what tells them apart is the in-use heap
// (malloc_info / mallinfo2, the runtime's heap metrics) against RSS.
//
// Identity: a process is followed by its name (comm) across restarts and
// PID changes; each PID is one segment, and no slope is fitted across a
// restart. Processes running side by side under one name are judged each
// on its own.
//
// Fires: a significant rise (Mann–Kendall p < 0.01) of USS (anon+swap when
// USS was not recorded) in the running PID's segment of at least 64 MiB
// and of 32 MiB and 5 % of its size per day, over at least an hour, with
// 95 % confidence (the end of the slope's 90 % interval nearer zero passes
// them too: fit.Limit in trend.go).
// Warning; critical when it would double within a week.
//
// Known false positives: caches that fill up to a configured bound (the
// curve flattens), JVMs growing their heap to -Xmx; the limit and the
// in-use heap say so.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

type processMemoryGrowth struct{}

func init() { register(processMemoryGrowth{}) }

func (processMemoryGrowth) Meta() Meta {
	return Meta{ID: "process_memory_growth", Trend: true, Title: "processes whose memory keeps growing",
		Needs: []Need{{"memdoctor_process_rss_bytes", "record processes over time (memdoctor record)"}},
		Reads: []string{"memdoctor_process_uss_bytes", "memdoctor_process_anon_bytes", "memdoctor_process_swap_bytes",
			"memdoctor_process_malloc_arenas", "memdoctor_glibc_info", "memdoctor_malloc_in_use_bytes"},
		Charts:    []string{ChartProcessMemory, ChartAllocatorView},
		Prefilter: presentPrefilter("memdoctor_process_rss_bytes"),
		Doc:       "a process (followed across restarts) keeps growing; leak or retention"}
}

const (
	procMinGrowth    = 64 << 20
	procMinPerDay    = 32 << 20
	procMinRelPerDay = 0.05
)

type procSeg struct {
	comm, pid string
	points    []sample.Point
	metric    string
}

func (processMemoryGrowth) Eval(in *Input) []model.Finding {
	w := in.Window
	if w == nil {
		return nil
	}
	metric := "memdoctor_process_uss_bytes"
	ss := w.Select(metric)
	if len(ss) == 0 {
		metric = "memdoctor_process_anon_bytes"
		ss = w.Select(metric)
	}
	byComm := map[string][]procSeg{}
	for _, s := range ss {
		c := s.Labels.Get("comm")
		byComm[c] = append(byComm[c], procSeg{comm: c, pid: s.Labels.Get("pid"), points: s.Points, metric: metric})
	}
	end := w.To.UnixMilli()
	var out []model.Finding
	for comm, segs := range byComm {
		sort.Slice(segs, func(i, j int) bool { return segs[i].points[0].T < segs[j].points[0].T })
		for i, sg := range segs {
			last := sg.points[len(sg.points)-1]
			if end-last.T > 3*stepOf(w) {
				continue // exited: judged as the earlier segment of a restart
			}
			f := judgeProcess(w, sg, segs[:i])
			if f != nil {
				out = append(out, *f)
			}
		}
		_ = comm
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Evidence[0].Value > out[j].Evidence[0].Value })
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

func judgeProcess(w *sample.Window, sg procSeg, earlier []procSeg) *model.Finding {
	ps := sg.points
	if len(ps) < declineMinPoints || time.Duration(ps[len(ps)-1].T-ps[0].T)*time.Millisecond < procMinSpan {
		return nil
	}
	f := fitTrend(ps)
	now := ps[len(ps)-1].V
	growth := f.Slope * model.Span{From: ps[0].T, To: ps[len(ps)-1].T}.Days()
	if !f.OK || f.P >= 0.01 || f.Slope < procMinPerDay || f.Slope < procMinRelPerDay*now || growth < procMinGrowth {
		return nil
	}
	// And as fast as that with confidence, not only on the fitted slope.
	lim, ok := f.Limit()
	if !ok || lim < procMinPerDay || lim < procMinRelPerDay*now || lim/f.Slope*growth < procMinGrowth {
		return nil
	}
	sev := model.Warning
	if 7*f.Slope >= now {
		sev = model.Critical
	}
	fd := &model.Finding{ID: "process_memory_growth", Severity: sev,
		Subject: subject(w, fmt.Sprintf("process %s (pid %s)", sg.comm, sg.pid)),
		Summary: fmt.Sprintf("%s grows %s a day (p=%s, +%s over %s), now %s",
			sg.comm, format.Bytes(int64(f.Slope)), format.Number(f.P), format.Bytes(int64(growth)), spanText(ps), format.Bytes(int64(now))),
		Evidence: []model.Evidence{
			ev("growth_bytes_per_day", f.Slope, "bytes_per_day"),
			ev("growth_limit_bytes_per_day", lim, "bytes_per_day"),
			ev("mann_kendall_p", f.P, ""),
			ev("growth_bytes", growth, "bytes"),
			ev(trimName(sg.metric), now, "bytes"),
		},
	}
	restarts := 0
	grewBefore := 0
	for _, e := range earlier {
		if e.points[len(e.points)-1].T <= ps[0].T {
			restarts++
			if g := fitTrend(e.points); g.OK && g.P < 0.01 && g.Slope > 0 {
				grewBefore++
			}
		}
	}
	if restarts > 0 {
		fd.Evidence = append(fd.Evidence, ev("restarts_in_window", float64(restarts), "count"),
			ev("earlier_runs_that_grew", float64(grewBefore), "count"))
	}
	if a := w.Get("memdoctor_process_malloc_arenas", "pid", sg.pid); a != nil {
		fd.Evidence = append(fd.Evidence, ev("malloc_arenas_estimated", lastValue(a), "count"))
	}
	if iu := model.Within(w.Get("memdoctor_malloc_in_use_bytes", "pid", sg.pid), model.Span{From: ps[0].T, To: ps[len(ps)-1].T}); len(iu) >= declineMinPoints {
		g := fitTrend(iu)
		class := "retention: the in-use heap is flat while memory grows (see " + allocatorHoarding{}.Meta().ID + ")"
		if g.OK && g.P < 0.01 && g.Slope >= 0.5*f.Slope {
			class = "leak: the in-use heap grows as fast (see " + processLeak{}.Meta().ID + ")"
		}
		fd.Evidence = append(fd.Evidence, ev("in_use_growth_bytes_per_day", g.Slope, "bytes_per_day"), evText("leak_or_retention", class))
		fd.Summary += "; " + strings.SplitN(class, ":", 2)[0]
	} else {
		fd.Evidence = append(fd.Evidence, evText("leak_or_retention",
			"growth alone cannot tell: a leak grows the in-use heap, retention grows free memory the allocator keeps; compare in-use heap (malloc_info, runtime heap metrics) with RSS"))
	}
	fd.Remedies = []model.Remedy{
		{Title: "compare the in-use heap with RSS (glibc: malloc_info; runtimes: their heap metrics)",
			Commands: []string{"memdoctor malloc " + model.ShellArg(sg.pid),
				"grep -E 'VmRSS|RssAnon' " + model.ShellPath("/proc/"+sg.pid+"/status")},
			Risk: "memdoctor malloc holds one thread of the process for about a millisecond (none if it runs the preload library)"},
		{Title: "if free memory is retained (in-use flat, RSS growing): trim it (malloc_trim) or cap arenas; if in-use grows: profile the leak",
			Risk: "see the " + mallocArenasMany{}.Meta().ID + " remedies for the trade-offs"},
	}
	return fd
}

func trimName(metric string) string {
	switch metric {
	case "memdoctor_process_uss_bytes":
		return "uss_bytes"
	case "memdoctor_process_anon_bytes":
		return "anon_bytes"
	}
	return metric
}
