package main

import (
	"bufio"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/spf13/cobra"
)

func newDiagnoseCmd() *cobra.Command {
	var (
		src       sourceFlags
		asJSON    bool
		fleetOpts fleetFlags
	)
	cmd := &cobra.Command{
		Use:   "diagnose --from SRC",
		Short: "Diagnose memory over time: trends, their causes and the state at the end",
		Long: `diagnose reads history and names what changed: available memory declining,
unreclaimable slab growing, dying memory cgroups accumulating, reclaim
thrashing at the watermarks, processes growing, daily peaks above their
baseline. SRC is any of:

  a recording made by 'memdoctor record' (read while it records),
  a directory of files a cron job saved (meminfo_2020-01-31.10:05,
    slabinfo_..., cgroups_..., vmstat_..., zoneinfo_..., stat_...),
  a directory of capture archives,
  an OpenMetrics / Prometheus text file with timestamps (node_exporter
    names; several instances are diagnosed each on its own).

With --prometheus URL instead of --from, a whole fleet is diagnosed
through its Prometheus: a handful of aggregated queries score every
instance, only the suspects' full ranges are fetched and judged by the
same rules, and findings are correlated with the kernel release and the
--by labels.

No slope is fitted across a reboot; too little data gives a note, not a guess.`,
		Example: `  memdoctor diagnose --from /var/lib/memdoctor/memdoctor.db
  memdoctor diagnose --from ./proc-history/ --since 2020-01-01 --json
  memdoctor diagnose --from fleet-dump.om --instance db7:9100
  memdoctor diagnose --prometheus http://prometheus:9090 --match '{job="node"}' --range 14d --by rack`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fleetOpts.prom.url != "" {
				if src.from != "" {
					return errors.New("give --from or --prometheus, not both")
				}
				if src.since != "" || src.instance != "" {
					return errors.New("with --prometheus the range is --range (ending at --until) and one host is --match '{instance=\"HOST\"}'")
				}
				return runFleet(cmd, &fleetOpts, src.until, asJSON)
			}
			defer heapFloorGC()()
			s, err := src.openWith(cmd, history.OpenDiagnosis)
			if err != nil {
				return err
			}
			defer s.Close()
			out, err := history.Diagnose(s, src.since, src.until)
			if err != nil {
				return err
			}
			defer out.Close()
			// The instances one at a time (of many, read back from a
			// temporary file): of 100,000, 16 MB of JSON.
			if asJSON {
				head := *out
				head.Instances = nil
				lists := []text.JSONList{text.EachOf("instances", out.EachInstance)}
				if out.Report != nil {
					// The findings and notes one at a time too: each names
					// its instance, whose name (hostile input) may be as
					// long as a line; marshalled whole, a report that named
					// one of 2 MiB twenty times was held five times over.
					rep := *out.Report
					head.Report = &rep
					if len(rep.Findings) > 0 {
						lists = append(lists, text.ListOf("findings", rep.Findings))
						rep.Findings = nil
					}
					if len(rep.Notes) > 0 {
						lists = append(lists, text.ListOf("notes", rep.Notes))
						rep.Notes = nil
					}
				}
				return text.WriteJSONLists(cmd.OutOrStdout(), &head, lists...)
			}
			// A line for each instance: buffered, not a write each.
			bw := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			each := func(fn func(text.WindowSummary) error) error {
				return out.EachInstance(func(r history.InstanceResult) error {
					return fn(text.WindowSummary{Instance: r.Instance, From: r.From, To: r.To, Step: r.Step(), Series: r.Series, Findings: r.Findings})
				})
			}
			if err := text.DiagnoseTextEach(bw, out.Report, out.NumInstances(), each, text.Options{Color: colorOK(cmd.OutOrStdout())}); err != nil {
				return err
			}
			return bw.Flush()
		},
	}
	src.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	fleetOpts.register(cmd)
	return cmd
}

// sourceFlags select the history a command reads (diagnose, report): a
// source and the range and instance within it.
type sourceFlags struct {
	from, since, until, instance string
	lenient                      bool
}

func (f *sourceFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.from, "from", "", "what to read: a recording, a directory of saved files or captures, or an OpenMetrics file")
	cmd.Flags().StringVar(&f.since, "since", "", "start of the range: RFC 3339, YYYY-MM-DD or -DURATION before the end of the data")
	cmd.Flags().StringVar(&f.until, "until", "", "end of the range (same forms)")
	cmd.Flags().StringVar(&f.instance, "instance", "", "read only this instance")
	cmd.Flags().BoolVar(&f.lenient, "lenient", false, "skip malformed lines and files (counted in a note) instead of failing")
}

// open opens the source, with a progress bar while it is ingested.
func (f *sourceFlags) open(cmd *cobra.Command) (*history.Source, error) {
	return f.openWith(cmd, history.Open)
}

// openWith opens the source with open (history.Open, or for diagnose
// history.OpenDiagnosis), with a progress bar while it is read.
func (f *sourceFlags) openWith(cmd *cobra.Command, open func(path, instance string, lenient bool, progress history.Progress) (*history.Source, error)) (*history.Source, error) {
	if f.from == "" {
		return nil, errors.New("--from is required: a recording, a directory of saved /proc files or captures, or an OpenMetrics file")
	}
	bar := newProgress(cmd.ErrOrStderr(), "reading "+f.from)
	s, err := open(f.from, f.instance, f.lenient, bar.update)
	bar.done()
	return s, err
}

// heapFloorGC runs the collector at GOGC=200 while less than 8 MiB is
// live (so at twice the runtime's 4 MiB minimum heap), at 100 past that,
// until the function it returns is called. diagnose --from a file of
// many instances, read a batch at a time, keeps 1 to 2 MB live and
// allocates about 13 KB an instance: at the 4 MiB minimum, 300,000
// instances took 1,179 collections and 12.1-13.1 s of CPU, at this floor
// 10.1-10.5 s for 9 MiB more peak RSS (40-41 MiB); GOGC=400 would be
// 8.5-10.1 s and 45-46 MiB. An explicit GOGC wins, and a memory limit
// (GOMEMLIMIT) still holds. What is live is read from the next goal the
// collection set (runtime.ReadMemStats, a pause of microseconds once a
// cycle): the goal is what it marked, plus the percentage in force of
// that (and of the stacks and globals, which a live heap of megabytes
// dwarfs). runtime/metrics says it exactly, but its initialiser, run at
// every command's start, took 80 to 130 µs (GODEBUG=inittrace) and 95
// allocations.
func heapFloorGC() (stop func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	var mu sync.Mutex
	stopped := false
	debug.SetGCPercent(200)
	pct := 200
	var ms runtime.MemStats
	var arm func()
	arm = func() {
		// Unreachable as soon as made: its cleanup runs after the next
		// collection, which sets the next one's percentage.
		runtime.AddCleanup(new([64]byte), func(struct{}) {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				return
			}
			runtime.ReadMemStats(&ms)
			want := 100
			if ms.NextGC*100/uint64(100+pct) < 8<<20 {
				want = 200
			}
			if want != pct {
				debug.SetGCPercent(want)
				pct = want
			}
			arm()
		}, struct{}{})
	}
	arm()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		debug.SetGCPercent(100)
	}
}
