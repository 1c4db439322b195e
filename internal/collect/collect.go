// Package collect reads one snapshot of everything that explains memory on a
// host through a procfs.FS (the live host, an unpacked capture or an archive)
// and turns it into samples: node_exporter's names and labels for host
// series, memdoctor_* for the rest.
//
// Required sources (meminfo) fail the collection; optional ones (slabinfo
// without root, PSI when disabled, cgroups, processes) become notes naming
// what is missing, what it hides and how to get it.
package collect

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/runtimes"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Options configure a collection.
type Options struct {
	// TopProcesses is how many processes get the expensive smaps_rollup read
	// and are reported (by PSS). 0 disables per-process collection.
	TopProcesses int
	// MaxSmapsReads bounds the smaps_rollup reads per collection (they walk
	// page tables under the target's mmap lock). Default 4 × TopProcesses.
	MaxSmapsReads int
	// TopCgroups is how many memory cgroups are reported by charged memory.
	TopCgroups int
	// ExtraCgroups bounds the cgroups read beyond the top ones because they
	// are near a limit or had OOM kills (default 50).
	ExtraCgroups int
	// CgroupEvents, kept across the collections of a recorder, makes the
	// cgroups read beyond the top ones those near a limit or whose OOM
	// kills, OOM invocations, memory.high breaches or limit hits rose since
	// the previous collection; nil (a one-shot check) takes those with any
	// OOM kill or breach since they were made, all one reading can tell.
	CgroupEvents *cgroups.EventHistory
	// MaxCgroupDirs bounds the cgroup directories read per collection.
	MaxCgroupDirs int
	// ArenaScan enables the glibc arena estimate from /proc/PID/maps for the
	// reported processes.
	ArenaScan bool
	// AskPreload, when > 0 on the live host, asks a process running
	// memdoctor's preload library whose stats hold no summary yet for one
	// (an info request, the library's request channel), waiting at most
	// this long. Only check sets it: the request is written as the
	// process' user, which the recorder's unit forbids.
	AskPreload time.Duration
	// Allocators names, on the live host, the allocator that serves each
	// reported process' malloc (memdoctor_process_allocator_info), from
	// the objects it maps; a glibc arena estimate is then made only for a
	// glibc process.
	Allocators bool
	// Now returns the sample time (default time.Now).
	Now func() time.Time
	// Live says the FS is this host's own /proc (so notes can speak of
	// this process' privileges).
	Live bool
	// Runtimes detects the language runtime of the reported processes and
	// reads every JVM's perf-data file (see internal/runtimes).
	Runtimes bool
	// DotNetPort reads .NET processes through their diagnostics port
	// (check, which then measures them over its GC interval).
	DotNetPort bool
	// DotNet, when set, is the watch whose sessions the .NET readings come
	// from (the recorder's, held across its samples).
	DotNet *runtimes.DotNetWatch
	// GCInterval is how far apart check reads the runtimes twice to
	// measure GC rates (ReadRuntimesAgain; 0: once).
	GCInterval time.Duration
	// SysctlVM names the files of /proc/sys/vm read (nil: every one).
	SysctlVM []string
	// Scrape lists applications' Prometheus endpoints whose runtime GC
	// series to read.
	Scrape []string
	// ScrapeTimeout bounds each scrape (default 5 s).
	ScrapeTimeout time.Duration
	// ScrapeAuth holds credentials sent with every scrape.
	ScrapeAuth runtimes.Auth
	// Discover reads the /metrics a reported process serves on its own
	// loopback ports when its runtime shows no GC state otherwise (live
	// hosts only; see internal/runtimes/discover.go).
	Discover bool
	// DiscoverMemo carries discovery's answers from one collection to the
	// next (the recorder's; nil: every process is asked).
	DiscoverMemo *runtimes.DiscoverMemo
	// OwnerMemo keeps the owner of each --scrape target's socket from one
	// collection to the next (the recorder's); nil looks again each time.
	OwnerMemo *runtimes.OwnerMemo
	// ExeMemo keeps the Go version of executables from one collection to
	// the next (the recorder's; nil: read each time).
	ExeMemo *runtimes.ExeMemo
	// Focus restricts per-process collection to some processes (check
	// --pid, --cgroup, --user); the zero value reads them all.
	Focus ProcessFocus
	// SortBy ranks processes: "pss" (default), "uss", "rss" or "swap". The
	// top N by that key are reported.
	SortBy string
	// UserTotals reads smaps_rollup of every (focused) process and adds
	// per-user totals (memdoctor_user_*), as smem -u does.
	UserTotals bool
	// FocusCgroup, when set, is a memory cgroup (path relative to the
	// memory hierarchy's root) read in full whether or not it is among the
	// largest or near a limit (check --cgroup).
	FocusCgroup string
	// KmsgPath, when set, is the kernel log to read the OOM killer's
	// reports from (/dev/kmsg on the live host; a saved log in tests).
	KmsgPath string
	// Names names the recorded cgroups' owners from the container
	// runtimes' and the kubelet's state on the host (pod, container
	// names); nil names them from their paths only. Kept across
	// collections, it caches what it read.
	Names *cgroups.Runtime
}

// ProcessFocus selects processes; a process must match every set field.
type ProcessFocus struct {
	// PIDs, when not empty, are the only processes read.
	PIDs []int
	// Cgroup is a cgroup path as in /proc/PID/cgroup ("/system.slice/x"),
	// or under /sys/fs/cgroup: processes in it or below it.
	Cgroup string
	// UID, when set, keeps the processes whose real uid it is.
	UID *int
}

// Active says whether the focus selects anything less than every process.
func (f ProcessFocus) Active() bool { return len(f.PIDs) > 0 || f.Cgroup != "" || f.UID != nil }

func (o *Options) defaults() {
	if o.MaxSmapsReads == 0 {
		o.MaxSmapsReads = 4 * o.TopProcesses
	}
	if o.ExtraCgroups == 0 {
		o.ExtraCgroups = 50
	}
	if o.MaxCgroupDirs == 0 {
		o.MaxCgroupDirs = 20000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Result is one collection.
type Result struct {
	Snapshot sample.Snapshot
	Notes    []sample.Note
	// Timings per collector.
	Timings []Timing
	// Runtimes is what the runtimes collector read (nil when disabled).
	Runtimes *runtimes.Result

	// maps and goVersion are what the processes' mappings and
	// executables said, kept for ReadRuntimesAgain, so that its second
	// reading reads neither again.
	maps      map[int][]procfs.Mapping
	goVersion func(pid int) (string, bool)
}

// Timing is one collector's cost.
type Timing struct {
	Collector string
	Duration  time.Duration
	OK        bool
}

// ErrRequired is wrapped when a required source cannot be read.
var ErrRequired = errors.New("required source unreadable")

type ctx struct {
	fs   procfs.FS
	opt  Options
	res  *Result
	live bool // reading this host's own /proc
	root bool // running with euid 0
	// asked is the time spent asking preload libraries for a summary;
	// past three times AskPreload no more are asked.
	asked time.Duration
	// maps keeps the mappings the process collector read, for the
	// runtimes collector (each /proc/PID/maps is read once per snapshot).
	maps map[int][]procfs.Mapping
	// envs keeps what each process' environment said (c.environ).
	envs map[int]procfs.Environ
	// objects are the mapped objects read to name allocators: each is
	// read once per collection (inject.Objects).
	objects *inject.Objects
	// kmsg is the kernel log read ahead (readKmsg), nil when not.
	kmsg *kmsgRead
}

func (c *ctx) add(name string, v float64, labels ...string) { c.res.Snapshot.Add(name, v, labels...) }

func (c *ctx) note(source, msg, hides, fix string) {
	c.res.Notes = append(c.res.Notes, sample.Note{Source: source, Message: msg, Hides: hides, Fix: fix})
}

type collector struct {
	name     string
	required bool
	run      func(*ctx) error
	order    int
	// concurrent: run reads nothing the collectors before it add, and
	// writes only its own ctx (see Collect).
	concurrent bool
	// prefetch, when set, reads ahead into c what run will add, while a
	// concurrent collector before it runs; it must read only what the
	// collectors before that one added.
	prefetch func(*ctx)
}

// merge adds what a concurrent collector's ctx collected to c.
func (c *ctx) merge(sub *ctx) {
	c.res.Snapshot.Metrics = slices.Grow(c.res.Snapshot.Metrics, len(sub.res.Snapshot.Metrics))
	for _, m := range sub.res.Snapshot.Metrics {
		c.res.Snapshot.AddMetric(m)
	}
	c.res.Notes = append(c.res.Notes, sub.res.Notes...)
	c.asked += sub.asked
	if sub.maps != nil {
		c.maps = sub.maps
	}
	if sub.envs != nil {
		c.envs = sub.envs
	}
	if sub.objects != nil {
		c.objects = sub.objects
	}
}

// collectors run in their order (meminfo first: without it nothing else
// matters). Each registers itself from its own file, <name>.go.
var collectors []collector

// register adds a collector, from the init of its file, at its place in
// the order; two collectors with one order are a programming error.
func register(order int, name string, required bool, run func(*ctx) error, opts ...func(*collector)) {
	i := sort.Search(len(collectors), func(i int) bool { return collectors[i].order >= order })
	if i < len(collectors) && collectors[i].order == order {
		panic(fmt.Sprintf("collectors %s and %s both have order %d", collectors[i].name, name, order))
	}
	col := collector{name: name, required: required, run: run, order: order}
	for _, o := range opts {
		o(&col)
	}
	collectors = slices.Insert(collectors, i, col)
}

// concurrently marks a collector concurrent (collector.concurrent).
func concurrently(col *collector) { col.concurrent = true }

// prefetching gives a collector a prefetch (collector.prefetch).
func prefetching(f func(*ctx)) func(*collector) {
	return func(col *collector) { col.prefetch = f }
}

// Collect reads one snapshot.
func Collect(fsys procfs.FS, opt Options) (*Result, error) {
	opt.defaults()
	res := &Result{}
	res.Snapshot.Time = opt.Now()
	c := &ctx{fs: fsys, opt: opt, res: res, live: opt.Live, root: os.Geteuid() == 0}
	// A concurrent collector (the processes', the costliest: most of it
	// the kernel walking page tables for smaps_rollup) starts at once on a
	// ctx of its own, beside the others, and its result is merged at its
	// place in the order: what it adds and notes comes where it always
	// did. Before waiting for it the collectors after it read what they
	// can ahead (prefetch).
	type running struct {
		sub  *ctx
		d    time.Duration
		err  error
		done chan struct{}
	}
	started := map[int]*running{}
	for i, col := range collectors {
		if !col.concurrent {
			continue
		}
		r := &running{sub: &ctx{fs: fsys, opt: opt, res: &Result{}, live: c.live, root: c.root}, done: make(chan struct{})}
		r.sub.res.Snapshot.Time = res.Snapshot.Time
		started[i] = r
		go func() {
			defer close(r.done)
			start := time.Now()
			r.err = col.run(r.sub)
			r.d = time.Since(start)
		}()
	}
	wait := func() {
		for _, r := range started {
			<-r.done
		}
	}
	prefetched := false
	ahead := map[int]time.Duration{} // each prefetch's time, counted as its collector's
	for i, col := range collectors {
		var (
			err error
			d   time.Duration
		)
		if r, ok := started[i]; ok {
			if !prefetched {
				prefetched = true
				for j := i + 1; j < len(collectors); j++ {
					if f := collectors[j].prefetch; f != nil {
						start := time.Now()
						f(c)
						ahead[j] = time.Since(start)
					}
				}
			}
			<-r.done
			c.merge(r.sub)
			err, d = r.err, r.d
		} else {
			start := time.Now()
			err = col.run(c)
			d = time.Since(start) + ahead[i]
		}
		res.Timings = append(res.Timings, Timing{col.name, d, err == nil})
		c.add("memdoctor_collector_duration_seconds", d.Seconds(), "collector", col.name)
		ok := 1.0
		if err != nil {
			ok = 0
		}
		c.add("memdoctor_collector_success", ok, "collector", col.name)
		if err != nil {
			if col.required {
				wait()
				return res, fmt.Errorf("%w: %w", ErrRequired, err)
			}
			c.note(col.name, err.Error(), "", "")
		}
	}
	res.maps = c.maps
	if c.objects != nil {
		res.goVersion = c.objects.GoVersion
	}
	return res, nil
}
