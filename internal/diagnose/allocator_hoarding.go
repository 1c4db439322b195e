package diagnose

// allocator_hoarding: the allocator keeps freed memory resident.
//
// Mechanism (incident 5): glibc malloc returns freed memory to the kernel
// only from the top of each heap, or when malloc_trim asks; chunks freed
// inside a heap stay resident, and with one arena per thread (up to 8 ×
// CPUs) the free memory of each arena serves only that arena's threads. A
// service whose threads free in a different pattern than they allocate
// keeps RSS far above what it uses: 137 GB of free chunks in ~100 arenas,
// no leak (bcc memleak found none), gone at once with malloc_trim(0).
//
// Evidence: the allocator's own view (memdoctor's preload library, or
// check --malloc, which pauses the process for malloc_info): in-use heap
// against resident anonymous memory; retained = free heap still resident.
//
// Fires: retained ≥ 256 MiB and ≥ 30 % of the process' anonymous memory;
// critical at ≥ 50 % and ≥ 4 GiB.
//
// Known false positives: right after a burst, before glibc's own trimming
// (at the top of the main heap) has run; a second reading tells.

import (
	"fmt"
	"math"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type allocatorHoarding struct{}

func init() { register(allocatorHoarding{}) }

func (allocatorHoarding) Meta() Meta {
	return Meta{ID: "allocator_hoarding", Title: "allocator keeping freed memory resident",
		Needs:     []Need{{"memdoctor_malloc_in_use_bytes", "the allocator's view: run the process with memdoctor's preload library (MEMDOCTOR_STATS), " + mallocHowTo}},
		Charts:    []string{ChartAllocatorView, ChartProcessMemory},
		Prefilter: presentPrefilter("memdoctor_malloc_in_use_bytes"),
		Doc:       "a glibc process keeps freed heap resident (in-use ≪ anon), with the trimmer's interval from the measured trim cost"}
}

const (
	hoardMin      = 256 << 20
	hoardShare    = 0.30
	hoardCrit     = 4 << 30
	hoardCritShar = 0.50
)

// retainedOf is the resident free heap: the allocator's own figure when
// malloc_info gave one, else anonymous memory minus the in-use heap.
func retainedOf(p model.Process) int64 {
	if p.Malloc == nil {
		return 0
	}
	if p.Malloc.RetainedBytes > 0 {
		return p.Malloc.RetainedBytes
	}
	return max(p.AnonBytes-p.Malloc.InUseBytes, 0)
}

// trimInterval picks the preload trimmer's interval from the measured cost
// of one trim: at most 0.1 % of the time spent trimming, at least 30 s. An
// unmeasured trim is estimated at 50 ms per GiB retained (incident 5: 37 GB
// in 1.97 s).
func trimInterval(p model.Process, retained int64) (time.Duration, float64) {
	cost := 0.05 * float64(retained) / (1 << 30)
	if p.Malloc != nil && p.Malloc.TrimSeconds != nil && *p.Malloc.TrimSeconds > 0 {
		cost = *p.Malloc.TrimSeconds
	}
	iv := time.Duration(math.Max(30, cost*1000) * float64(time.Second)).Round(time.Second)
	return iv, cost
}

func (allocatorHoarding) Eval(in *Input) []model.Finding {
	h := in.Host
	if h == nil {
		return nil
	}
	var out []model.Finding
	for _, p := range h.Processes {
		if p.Malloc == nil || p.AnonBytes <= 0 || !glibcMalloc(p) {
			continue // another allocator's heap is not glibc's to judge
		}
		ret := retainedOf(p)
		share := float64(ret) / float64(p.AnonBytes)
		if ret < hoardMin || share < hoardShare {
			continue
		}
		sev := model.Warning
		if ret >= hoardCrit && share >= hoardCritShar {
			sev = model.Critical
		}
		iv, cost := trimInterval(p, ret)
		pid := fmt.Sprint(p.PID)
		f := model.Finding{ID: "allocator_hoarding", Severity: sev, Subject: fmt.Sprintf("process %s (pid %d)", p.Comm, p.PID),
			Summary: fmt.Sprintf("%s keeps %s of freed heap resident (%.0f%% of its %s anonymous memory; %s in use): allocator retention, not a leak",
				p.Comm, format.Bytes(ret), 100*share, format.Bytes(p.AnonBytes), format.Bytes(p.Malloc.InUseBytes)),
			Evidence: []model.Evidence{
				ev("retained_bytes", float64(ret), "bytes"),
				ev("in_use_bytes", float64(p.Malloc.InUseBytes), "bytes"),
				ev("anon_bytes", float64(p.AnonBytes), "bytes"),
				ev("rss_bytes", float64(p.RSSBytes), "bytes"),
				ev("retained_share_percent", 100*share, "percent"),
				ev("malloc_arenas", float64(p.Malloc.Arenas), "count"),
			},
		}
		if h.Info.Glibc != "" {
			f.Evidence = append(f.Evidence, evText("glibc", h.Info.Glibc))
		}
		f.Evidence = append(f.Evidence, ev("trim_cost_seconds", cost, "seconds"))
		// A process that runs the preload library (it wrote these stats)
		// needs only its settings, not the library again.
		preload := "LD_PRELOAD=$(memdoctor preload --print-path) "
		restart := "a restart is needed to load the library"
		if p.Preload {
			preload = ""
			restart = "it already runs the library: add the variable to the environment it starts with; a restart is needed to read it"
		}
		f.Remedies = []model.Remedy{
			{Title: "give it back now (the process pauses for the trim)",
				Commands: []string{"memdoctor trim " + pid + "            # dry run: the expected gain", "memdoctor trim " + pid + " --apply"},
				Risk:     fmt.Sprintf("the process stops for about %.2f s while glibc walks its arenas", cost)},
			{Title: fmt.Sprintf("keep it given back: the preload trimmer every %v (trim cost %.2f s, under 0.1%% of the time)", iv, cost),
				Commands: []string{fmt.Sprintf("%sMEMDOCTOR_TRIM_INTERVAL=%s MEMDOCTOR_STATS=/var/log/memdoctor-%s.%%p.jsonl <command>", preload, iv, fileWord(p.Comm))},
				Risk:     "each trim pauses allocations in the process for its duration; " + restart},
			{Title: "or trim after every GiB freed (bursty services)",
				Commands: []string{preload + "MEMDOCTOR_TRIM_FREED=1GiB <command>"},
				Risk:     "trims land inside free() calls of the thread that crosses the threshold: a latency spike there; " + restart},
			{Title: "fewer arenas share freed memory better: it helps when many arenas retain freed memory (a Ruby server's RSS fell 69%), it does not help when one arena holds it; measure",
				Commands: []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=4 <command>   # or MALLOC_ARENA_MAX=4"},
				Risk:     "more lock contention between threads in malloc"},
			{Title: "or an allocator that returns memory on its own",
				Commands: []string{"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 <command>   # apt-get install libjemalloc2",
					"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 <command>   # apt-get install libtcmalloc-minimal4"},
				Risk: "a different allocator changes performance and memory behaviour everywhere: validate on a canary first"},
		}
		f.Remedies = withoutRaisedCap(f.Remedies, p)
		out = append(out, f)
	}
	return out
}

// Advise does not advise the preload library to a process that runs it.
func (allocatorHoarding) Advise(in *Input, how string) string { return preloadGiven(in, how) }
