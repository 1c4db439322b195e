package diagnose

// process_leak: the in-use heap itself grows.
//
// Mechanism: a leak keeps references to memory the program no longer
// needs, so what the allocator counts as in use grows; retention (see
// allocator_hoarding) grows RSS while in use stays flat. With the
// allocator's view recorded over time (memdoctor's preload library writes
// it without pausing the process), the two are told apart: this rule fires
// on in-use growth, and process_memory_growth on RSS growth alone.
//
// Fires: a significant rise (Mann–Kendall p < 0.01) of the in-use heap in
// the running process of at least 64 MiB, and of 16 MiB and 2 % per day,
// over at least an hour, with 95 % confidence (the end of the slope's 90 %
// interval nearer zero passes them too: fit.Limit in trend.go). Warning.
//
// Known false positives: caches that fill to a bound (the curve flattens);
// a longer window shows the plateau.
//
// Sites: when the process runs memdoctor's preload library with
// MEMDOCTOR_PROFILE, the recording holds the bytes its largest allocation
// sites keep (memdoctor_heap_site_in_use_bytes{site}); the finding names
// the site that grew most over the window and its share of the sites'
// growth ("91% from parse_record ← ingest_batch ← worker_main (libingest.so)").

import (
	"fmt"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

type processLeak struct{}

func init() { register(processLeak{}) }

func (processLeak) Meta() Meta {
	return Meta{ID: "process_leak", Trend: true, Title: "processes whose in-use heap grows (a leak)",
		Needs:     []Need{{"memdoctor_malloc_in_use_bytes", "record the allocator's view over time: run the process with memdoctor's preload library (MEMDOCTOR_STATS) while memdoctor record runs"}},
		Reads:     []string{"memdoctor_process_anon_bytes", "memdoctor_heap_site_in_use_bytes"},
		Charts:    []string{ChartAllocatorView, ChartProcessMemory},
		Prefilter: presentPrefilter("memdoctor_malloc_in_use_bytes"),
		Doc:       "the allocator's in-use heap itself grows: a leak, not retention"}
}

func (processLeak) Eval(in *Input) []model.Finding {
	w := in.Window
	if w == nil {
		return nil
	}
	end := w.To.UnixMilli()
	var out []model.Finding
	for _, s := range w.Select("memdoctor_malloc_in_use_bytes") {
		ps := s.Points
		if len(ps) < declineMinPoints || end-ps[len(ps)-1].T > 3*stepOf(w) ||
			time.Duration(ps[len(ps)-1].T-ps[0].T)*time.Millisecond < procMinSpan {
			continue
		}
		f := fitTrend(ps)
		now := ps[len(ps)-1].V
		growth := f.Slope * model.Span{From: ps[0].T, To: ps[len(ps)-1].T}.Days()
		if !f.OK || f.P >= 0.01 || f.Slope < 16<<20 || f.Slope < 0.02*now || growth < 64<<20 {
			continue
		}
		// And as fast as that with confidence, not only on the fitted
		// slope.
		lim, ok := f.Limit()
		if !ok || lim < 16<<20 || lim < 0.02*now || lim/f.Slope*growth < 64<<20 {
			continue
		}
		comm, pid := s.Labels.Get("comm"), s.Labels.Get("pid")
		qpid := model.ShellArg(pid)
		fd := model.Finding{ID: "process_leak", Severity: model.Warning, Subject: subject(w, fmt.Sprintf("process %s (pid %s)", comm, pid)),
			Summary: fmt.Sprintf("%s's in-use heap grows %s a day (p=%s, +%s over %s, now %s): a leak, not allocator retention",
				comm, format.Bytes(int64(f.Slope)), format.Number(f.P), format.Bytes(int64(growth)), spanText(ps), format.Bytes(int64(now))),
			Evidence: []model.Evidence{
				ev("in_use_growth_bytes_per_day", f.Slope, "bytes_per_day"),
				ev("in_use_growth_limit_bytes_per_day", lim, "bytes_per_day"),
				ev("mann_kendall_p", f.P, ""),
				ev("in_use_growth_bytes", growth, "bytes"),
				ev("in_use_bytes", now, "bytes"),
			},
			Remedies: []model.Remedy{
				{Title: "find what holds the memory: a heap profile of the running process",
					Commands: []string{"memleak-bpfcc -p " + qpid + " --older 600000   # outstanding allocations older than 10 min (bcc)",
						"heaptrack -p " + qpid},
					Risk: "profilers slow allocation while attached"},
				{Title: "until fixed: restart before it runs out (the growth rate gives the time left)", Risk: "a restart"},
			},
		}
		if site, share, ok := topLeakSite(w, pid, model.Span{From: ps[0].T, To: ps[len(ps)-1].T}); ok {
			fd.Summary += fmt.Sprintf("; %.0f%% of the sampled growth from %s", 100*share, site)
			fd.Evidence = append(fd.Evidence, ev("top_site_growth_share", share, "ratio"))
			fd.Remedies = append([]model.Remedy{{Title: "see the sites and their stacks, and write a pprof profile",
				Commands: []string{"memdoctor leaks " + qpid + " --interval 10m --output heap.pb.gz"}}}, fd.Remedies...)
		} else {
			fd.Remedies = append(fd.Remedies, model.Remedy{Title: "name the code that leaks at low cost: restart it with memdoctor's heap profile, then ask",
				Commands: []string{"LD_PRELOAD=$(memdoctor preload --print-path) MEMDOCTOR_PROFILE=512KiB " + model.ShellArg(comm) + " ...",
					"memdoctor leaks PID --interval 10m"},
				Risk: "a restart; sampling costs a few percent of allocation throughput"})
		}
		if a := w.Get("memdoctor_process_anon_bytes", "pid", pid); a != nil {
			if g := fitTrend(model.Within(a, model.Span{From: ps[0].T, To: ps[len(ps)-1].T})); g.OK {
				fd.Evidence = append(fd.Evidence, ev("anon_growth_bytes_per_day", g.Slope, "bytes_per_day"))
			}
		}
		out = append(out, fd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Evidence[0].Value > out[j].Evidence[0].Value })
	return out
}

// Advise does not advise the preload library to a process that runs it.
func (processLeak) Advise(in *Input, how string) string { return preloadGiven(in, how) }

// topLeakSite finds, among the heap profile sites of pid, the one whose
// in-use bytes grew most over sp, and its share of the growth of all sites
// that grew. ok is false without sites or without growth.
func topLeakSite(w *sample.Window, pid string, sp model.Span) (site string, share float64, ok bool) {
	var total, best float64
	for _, s := range w.Select("memdoctor_heap_site_in_use_bytes", "pid", pid) {
		ps := model.Within(s, sp)
		if len(ps) == 0 {
			continue
		}
		// A site may enter the kept few only late: its growth counts from 0
		// when it first appears after the start of the window.
		first := ps[0].V
		if ps[0].T > sp.From+(sp.To-sp.From)/10 {
			first = 0
		}
		g := ps[len(ps)-1].V - first
		if g <= 0 {
			continue
		}
		total += g
		if name := s.Labels.Get("site"); g > best || g == best && name < site {
			best, site = g, name
		}
	}
	if total <= 0 || site == "" {
		return "", 0, false
	}
	return site, best / total, true
}
