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
// over at least an hour. Warning.
//
// Known false positives: caches that fill to a bound (the curve flattens);
// a longer window shows the plateau.

import (
	"fmt"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/human"
)

type processLeak struct{}

func init() { register(processLeak{}) }

func (processLeak) Meta() Meta {
	return Meta{ID: "process_leak", Trend: true, Title: "processes whose in-use heap grows (a leak)",
		Needs:     []Need{{"memdoctor_malloc_in_use_bytes", "record the allocator's view over time: run the process with memdoctor's preload library (MEMDOCTOR_STATS) while memdoctor record runs"}},
		Reads:     []string{"memdoctor_process_anon_bytes"},
		Charts:    []string{ChartAllocatorView, ChartProcessMemory},
		Prefilter: presentPrefilter("memdoctor_malloc_in_use_bytes"),
		Doc:       "the allocator's in-use heap itself grows: a leak, not retention"}
}

func (processLeak) Eval(in *Input) []Finding {
	w := in.Window
	if w == nil {
		return nil
	}
	end := w.To.UnixMilli()
	var out []Finding
	for _, s := range w.Select("memdoctor_malloc_in_use_bytes") {
		ps := s.Points
		if len(ps) < declineMinPoints || end-ps[len(ps)-1].T > 3*stepOf(w) ||
			time.Duration(ps[len(ps)-1].T-ps[0].T)*time.Millisecond < procMinSpan {
			continue
		}
		f := fitTrend(ps)
		now := ps[len(ps)-1].V
		growth := f.Slope * span{ps[0].T, ps[len(ps)-1].T}.days()
		if !f.OK || f.P >= 0.01 || f.Slope < 16<<20 || f.Slope < 0.02*now || growth < 64<<20 {
			continue
		}
		comm, pid := s.Labels.Get("comm"), s.Labels.Get("pid")
		fd := Finding{ID: "process_leak", Severity: Warning, Subject: subject(w, fmt.Sprintf("process %s (pid %s)", comm, pid)),
			Summary: fmt.Sprintf("%s's in-use heap grows %s a day (p=%s, +%s over %s, now %s): a leak, not allocator retention",
				comm, human.Bytes(int64(f.Slope)), Number(f.P), human.Bytes(int64(growth)), spanText(ps), human.Bytes(int64(now))),
			Evidence: []Evidence{
				ev("in_use_growth_bytes_per_day", f.Slope, "bytes_per_day"),
				ev("mann_kendall_p", f.P, ""),
				ev("in_use_growth_bytes", growth, "bytes"),
				ev("in_use_bytes", now, "bytes"),
			},
			Remedies: []Remedy{
				{Title: "find what holds the memory: a heap profile of the running process",
					Commands: []string{"memleak-bpfcc -p " + pid + " --older 600000   # outstanding allocations older than 10 min (bcc)",
						"heaptrack -p " + pid},
					Risk: "profilers slow allocation while attached"},
				{Title: "until fixed: restart before it runs out (the growth rate gives the time left)", Risk: "a restart"},
			},
		}
		if a := w.Get("memdoctor_process_anon_bytes", "pid", pid); a != nil {
			if g := fitTrend(within(a, span{ps[0].T, ps[len(ps)-1].T})); g.OK {
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
