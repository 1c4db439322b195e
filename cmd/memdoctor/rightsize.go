package main

import (
	"errors"
	"time"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/memdoctor/memdoctor/internal/usecase/prometheus"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newRightsizeCmd) }

func newRightsizeCmd() *cobra.Command {
	var (
		src           sourceFlags
		pf            promFlags
		cgroup        string
		minRange      time.Duration
		asJSON, asVPA bool
		asPatch       bool
	)
	cmd := &cobra.Command{
		Use:   "rightsize --from SRC | --prometheus URL",
		Short: "Recommend each container's memory request and limit from what its reclaim cannot free",
		Long: `rightsize reads a recording (--from) or a Prometheus range (--prometheus)
and recommends, per container, a memory request and limit from the memory
its reclaim cannot take back (anon, shmem, the kernel's unreclaimable
part), not from its usage or working set:

  request = p99 of the unreclaimable memory + the page cache need
  limit   = max(the highest unreclaimable × 1.2, it + 32 MiB)
            + the page cache need

The page cache need is measured, not a flat percentage: the mapped files
and dirty pages, the cache refaulted within 5 minutes (its median rate), and
the active page cache when the tasks stalled on memory (PSI) more than 1%
of the time. A JVM's limit holds its whole heap (-Xmx) and what it uses
besides, whatever the range touched. The runtime settings that must move
with the limit are named (JVM -Xmx or MaxRAMPercentage, GOMEMLIMIT, .NET
GCHeapHardLimit, MALLOC_ARENA_MAX where many arenas were measured).

Each recommendation states its confidence (range length, OOM kills,
restarts). Too little data, or a container whose unreclaimable memory
grows every quarter of the range (a leak), is refused with the reason.
Beside it, what "max working set + 15%" (Robusta KRR's rule) would set,
and whether the data says that limit would have OOM-killed the container
or wasted memory.

From Prometheus (cadvisor and kube-state-metrics), the split is coarser:
rss as what reclaim cannot free, cache as page cache, no refaults.

Outputs: a table (default), --json, --vpa (a VerticalPodAutoscaler's
status.recommendation per pod) or --patch (kubectl in-place resize,
Kubernetes 1.33+).`,
		Example: `  memdoctor rightsize --from /var/lib/memdoctor/memdoctor.db
  memdoctor rightsize --from /var/lib/memdoctor/memdoctor.db --cgroup /kubepods --since -7d --json
  memdoctor rightsize --from /var/lib/memdoctor/memdoctor.db --patch
  memdoctor rightsize --prometheus http://prometheus:9090 --range 14d --match '{namespace="shop"}' --vpa`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n := 0
			for _, b := range []bool{asJSON, asVPA, asPatch} {
				if b {
					n++
				}
			}
			if n > 1 {
				return errors.New("give one of --json, --vpa and --patch")
			}
			if minRange < 0 {
				return errors.New("--min-range: want a positive duration such as 24h")
			}
			var rep *history.RightsizeReport
			var err error
			switch {
			case pf.url != "" && src.from != "":
				return errors.New("give --from or --prometheus, not both")
			case pf.url != "":
				if src.since != "" || src.instance != "" || cgroup != "" {
					return errors.New("with --prometheus the range is --range (ending at --until) and the containers are --match '{namespace=\"NS\"}'")
				}
				rep, err = runRightsizeProm(cmd, &pf, src.until, minRange)
			default:
				if pf.match != "" {
					return errors.New("--match selects Prometheus series: with --from, choose containers with --cgroup PATH")
				}
				var s *history.Source
				if s, err = src.open(cmd); err != nil {
					return err
				}
				defer s.Close()
				rep, err = history.Rightsize(s, src.since, src.until, history.RightsizeOptions{MinRange: minRange, Cgroup: cgroup})
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return writeJSON(out, rep)
			case asVPA:
				return text.RightsizeVPA(out, rep)
			case asPatch:
				return text.RightsizePatch(out, rep)
			}
			return text.RightsizeText(out, rep)
		},
	}
	src.register(cmd)
	pf.register(cmd, true)
	cmd.Flags().StringVar(&cgroup, "cgroup", "", "with --from: only this cgroup `PATH` and those below it")
	cmd.Flags().DurationVar(&minRange, "min-range", 24*time.Hour, "refuse to recommend from less history than this (a day holds a daily peak)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the recommendations as JSON")
	cmd.Flags().BoolVar(&asVPA, "vpa", false, "print a VerticalPodAutoscaler status.recommendation per pod (YAML)")
	cmd.Flags().BoolVar(&asPatch, "patch", false, "print kubectl in-place resize commands (--subresource resize, Kubernetes 1.33+)")
	return cmd
}

// runRightsizeProm right-sizes the containers a Prometheus holds over the
// flags' range.
func runRightsizeProm(cmd *cobra.Command, pf *promFlags, until string, minRange time.Duration) (*history.RightsizeReport, error) {
	win, err := pf.window(until)
	if err != nil {
		return nil, err
	}
	c, err := prometheus.Connect(pf.server())
	if err != nil {
		return nil, err
	}
	bar := newProgress(cmd.ErrOrStderr(), "right-sizing from "+c.URL())
	ctx, end := pf.session(cmd, c, bar, "right-sizing")
	rep, err := prometheus.Rightsize(ctx, c, pf.match, win, minRange)
	err = end(err)
	bar.done()
	return rep, err
}
