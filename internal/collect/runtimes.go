package collect

// Language runtimes' garbage collectors: the --scrape targets, every JVM's
// perf-data file, and the runtime of each reported process (see
// internal/runtimes for the names and the mapping).

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/runtimes"
	"github.com/memdoctor/memdoctor/internal/sample"
)

func init() { register(110, "runtimes", false, collectRuntimes) }

// RuntimeOptions turns the collection options into what the runtimes reader
// needs, with the reported processes of a snapshot as the ones to inspect.
func RuntimeOptions(opt Options, s *sample.Snapshot) runtimes.Options {
	ro := runtimes.Options{URLs: opt.Scrape, Scraper: runtimes.Scraper{Timeout: opt.ScrapeTimeout, Auth: opt.ScrapeAuth}, Comms: map[int]string{}, OwnerMemo: opt.OwnerMemo}
	if !opt.Runtimes {
		return ro
	}
	// A focus (--pid, --cgroup, --user) reads the runtimes of the focused
	// processes only: the JVMs found through /tmp/hsperfdata_* are every
	// JVM on the host, whose findings the focus says it hides.
	ro.NoHostJVMs = opt.Focus.Active()
	ro.DotNetPort = opt.DotNetPort
	ro.DotNet = opt.DotNet
	ro.Discover = opt.Discover && opt.Live
	ro.DiscoverMemo, ro.ExeMemo = opt.DiscoverMemo, opt.ExeMemo
	for _, m := range s.Select("memdoctor_process_rss_bytes") {
		pid, err := strconv.Atoi(m.Labels.Get("pid"))
		if opt.Live && pid == os.Getpid() {
			continue // memdoctor itself (a Go program) is not a finding
		}
		if err == nil && pid > 0 {
			ro.PIDs = append(ro.PIDs, pid)
			ro.Comms[pid] = m.Labels.Get("comm")
		}
	}
	return ro
}

func collectRuntimes(c *ctx) error {
	if !c.opt.Runtimes && len(c.opt.Scrape) == 0 {
		return nil
	}
	ro := RuntimeOptions(c.opt, &c.res.Snapshot)
	ro.Maps = c.maps
	if c.objects != nil {
		ro.GoVersions = c.objects.GoVersion
	}
	var res *runtimes.Result
	if c.opt.Runtimes {
		res = runtimes.Read(context.Background(), c.fs, ro)
	} else {
		res = runtimes.Read(context.Background(), c.fs, runtimes.Options{URLs: ro.URLs, Scraper: ro.Scraper, NoHostJVMs: true, OwnerMemo: ro.OwnerMemo})
	}
	c.res.Runtimes = res
	for _, m := range res.Metrics() {
		c.res.Snapshot.AddMetric(m)
	}
	c.res.Notes = append(c.res.Notes, res.Notes...)
	return nil
}

// Bars start the display of a long read's progress (label says what is
// read) and return its update and what ends it.
type Bars = func(label string) (update func(done, total int64), done func())

// ReadsRuntimesAgain says whether ReadRuntimesAgain will wait and read
// the runtimes of res again: some have GC data, and opt a GC interval.
func ReadsRuntimesAgain(opt Options, res *Result) bool {
	return opt.GCInterval > 0 && res.Runtimes != nil && hasGC(res.Runtimes)
}

// ReadRuntimesAgain is the second reading of check's GC interval: it reads
// the runtimes of res (read with opt) again opt.GCInterval later (watching
// JVMs' perf data for the cause of each collection meanwhile, and running
// a GC session on each .NET process read through its port), replaces the
// first reading's runtime series in res with the second, and returns a
// scrape of the first reading. It returns nil when there is nothing to
// measure twice. bars (nil: none) draws the wait; ctx ends it early.
func ReadRuntimesAgain(ctx context.Context, fsys procfs.FS, opt Options, res *Result, bars Bars) *sample.Snapshot {
	opt.defaults()
	if !ReadsRuntimesAgain(opt, res) {
		return nil
	}
	first := res.Runtimes
	earlier := &sample.Snapshot{Time: res.Snapshot.Time}
	for _, m := range first.Metrics() {
		earlier.AddMetric(m)
	}
	watch := runtimes.NewWatch(fsys, first)
	// Allocation ticks (verbose) for the LOH allocation rate.
	dn := runtimes.StartDotNet(ctx, first, true, func(pid int) (int64, bool, error) { return cgroups.Headroom(fsys, pid) })
	update, done := func(int64, int64) {}, func() {}
	if bars != nil {
		update, done = bars("measuring GC rates")
	}
	// A JVM's perf data is polled every 5 ms; with none to watch the
	// process sleeps to the end (or wakes every 100 ms for the bar): a 5 ms
	// ticker with nothing to poll was a third of check's CPU time, in the
	// scheduler and the netpoller.
	start := time.Now()
	wake := time.NewTimer(0)
	<-wake.C
	for time.Since(start) < opt.GCInterval && ctx.Err() == nil {
		wait := opt.GCInterval - time.Since(start)
		if !watch.Empty() {
			wait = min(wait, 5*time.Millisecond)
		} else if bars != nil {
			wait = min(wait, 100*time.Millisecond)
		}
		wake.Reset(wait)
		select {
		case <-wake.C:
		case <-ctx.Done():
			wake.Stop()
		}
		if !watch.Empty() {
			watch.Poll(fsys)
		}
		update(int64(time.Since(start)/time.Millisecond), int64(opt.GCInterval/time.Millisecond))
	}
	dn.Stop()
	done()
	ro := RuntimeOptions(opt, &res.Snapshot)
	ro.PIDs = nil
	ro.NoHostJVMs = true
	for _, rd := range first.Readings {
		// JVMs read from hsperfdata, and the processes behind scrape
		// targets (so that the second reading matches them again)
		if rd.Source == "hsperfdata" || rd.Source == runtimes.SourceEventPipe || rd.Source == "scrape" && rd.PID > 0 {
			ro.PIDs = append(ro.PIDs, rd.PID)
		}
		if rd.Source == "hsperfdata" {
			if ro.KnownJVMs == nil {
				ro.KnownJVMs = map[int]bool{}
			}
			ro.KnownJVMs[rd.PID] = true
		}
	}
	ro.Watch = watch
	ro.DotNet = dn
	// The same processes: their mappings and executables as the first
	// reading found them, and the pages discovery found asked again
	// without reading their sockets.
	ro.Maps, ro.GoVersions = res.maps, res.goVersion
	for _, rd := range first.Readings {
		if rd.Source == "scrape" && rd.PID > 0 && rd.Also != "" && !slices.Contains(ro.URLs, rd.Target) {
			if ro.Served == nil {
				ro.Served = map[int]string{}
			}
			ro.Served[rd.PID] = rd.Target
		}
	}
	second := runtimes.Read(context.Background(), fsys, ro)
	later := sample.Snapshot{Time: opt.Now(), Instance: res.Snapshot.Instance}
	for _, m := range res.Snapshot.Metrics {
		if !isRuntimeGC(m.Name) {
			later.AddMetric(m)
		}
	}
	// Detected-only runtimes (no GC data) keep their first reading.
	for _, rd := range first.Readings {
		if rd.Source == "maps" {
			for _, m := range rd.Metrics() {
				later.AddMetric(m)
			}
		}
	}
	for _, m := range second.Metrics() {
		later.AddMetric(m)
	}
	res.Snapshot = later
	// A source that failed both times (a scrape target down) is noted once.
	noted := map[string]bool{}
	for _, n := range res.Notes {
		noted[n.Source] = true
	}
	for _, n := range second.Notes {
		if !noted[n.Source] {
			res.Notes = append(res.Notes, n)
		}
	}
	return earlier
}

func hasGC(r *runtimes.Result) bool {
	for _, rd := range r.Readings {
		if rd.Source != "maps" {
			return true
		}
	}
	return false
}

func isRuntimeGC(name string) bool { return strings.HasPrefix(name, "memdoctor_runtime_") }
