package collect

// Language runtimes' garbage collectors: the --scrape targets, every JVM's
// perf-data file, and the runtime of each reported process (see
// internal/runtimes for the names and the mapping).

import (
	"context"
	"os"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/runtimes"
	"github.com/memdoctor/memdoctor/internal/sample"
)

func init() { register(110, "runtimes", false, collectRuntimes) }

// RuntimeOptions turns the collection options into what the runtimes reader
// needs, with the reported processes of a snapshot as the ones to inspect.
func RuntimeOptions(opt Options, s *sample.Snapshot) runtimes.Options {
	ro := runtimes.Options{URLs: opt.Scrape, Scraper: runtimes.Scraper{Timeout: opt.ScrapeTimeout, Auth: opt.ScrapeAuth}, Comms: map[int]string{}}
	if !opt.Runtimes {
		return ro
	}
	// A focus (--pid, --cgroup, --user) reads the runtimes of the focused
	// processes only: the JVMs found through /tmp/hsperfdata_* are every
	// JVM on the host, whose findings the focus says it hides.
	ro.NoHostJVMs = opt.Focus.Active()
	ro.DotNetPort = opt.DotNetPort
	ro.Discover = opt.Discover && opt.Live
	ro.DiscoverMemo = opt.DiscoverMemo
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
		res = runtimes.Read(context.Background(), c.fs, runtimes.Options{URLs: ro.URLs, Scraper: ro.Scraper, NoHostJVMs: true})
	}
	c.res.Runtimes = res
	for _, m := range res.Metrics() {
		c.res.Snapshot.AddMetric(m)
	}
	c.res.Notes = append(c.res.Notes, res.Notes...)
	return nil
}
