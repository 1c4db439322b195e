package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/probe"
	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newProbeCmd) }

func newProbeCmd() *cobra.Command {
	var (
		o       probe.Options
		out     string
		noSave  bool
		asJSON  bool
		compare bool
		root    string
	)
	cmd := &cobra.Command{
		Use:   "probe --pid PID --url URL [-n 100] [-c 1]",
		Short: "Measure a server's memory and latency under load, to compare before/after a change",
		Long: `probe runs one experiment: it sends HTTP GET requests to --url from -c
closed-loop workers (-n requests in all, or for --duration) while reading
the memory of process --pid (USS, PSS and RSS from smaps_rollup) every
--interval, plus once before the first request (baseline) and once after
the last. It prints the latency percentiles (p50, p90, p99, max) and the
memory median and worst during the run.

The result is saved as JSON so two runs can be set side by side: by default
to ./probe-COMM-PID-YYYYMMDD-HHMMSS.json in the current directory (--out
FILE to choose, --no-save to skip). --compare A.json B.json prints the
before/after table: memory median/worst and latency p50/p90/p99/max with the
change and the ratio B/A.

Requests that fail (refused, reset, timed out) or answer non-2xx are counted
and reported, not hidden; a run in which every request failed prints its
result and exits 1 (its numbers describe error answers). The first request is a preflight: an unreachable
URL stops the probe before it starts. Header values given with --header are
sent but never saved; a user:password in the URL is redacted.`,
		Example: `  # the exporter as it is, then with the fix, then side by side
  memdoctor probe --pid 4242 --url http://127.0.0.1:9394/metrics -n 100 -c 1 --out before.json
  memdoctor probe --pid 4242 --url http://127.0.0.1:9394/metrics -n 100 -c 1 --out after.json
  memdoctor probe --compare before.json after.json

  # a scraper's pace: 2 requests a second for a minute, idle time included
  memdoctor probe --pid 4242 --url http://127.0.0.1:9394/metrics --duration 1m --rate 2

  memdoctor probe --pid 4242 --url http://127.0.0.1:8080/ -n 500 -c 4 --warmup 20 --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if compare {
				if len(args) != 2 {
					return errors.New("--compare wants two result files: memdoctor probe --compare A.json B.json")
				}
				return nil
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if compare {
				a, err := probe.Load(args[0])
				if err != nil {
					return fmt.Errorf("%w (want a file saved by memdoctor probe)", err)
				}
				b, err := probe.Load(args[1])
				if err != nil {
					return fmt.Errorf("%w (want a file saved by memdoctor probe)", err)
				}
				c := probe.Compare(a, b)
				if asJSON {
					return c.WriteJSON(w)
				}
				return text.ProbeCompareText(w, c)
			}
			if !cmd.Flags().Changed("pid") || !cmd.Flags().Changed("url") {
				return errors.New("probe needs --pid PID and --url URL (see memdoctor probe --help)")
			}
			bar := newProgress(cmd.ErrOrStderr(), "probe")
			o.Progress = bar.update
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			res, err := probe.RunAt(ctx, root, o)
			bar.done()
			if err != nil {
				return err
			}
			if !noSave {
				path := out
				if path == "" {
					path = defaultProbePath(res)
				}
				if err := probe.Save(path, res); err != nil {
					return err
				}
				_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "saved %s (compare two runs with: memdoctor probe --compare A.json B.json)\n", path)
			}
			if asJSON {
				err = res.WriteJSON(w)
			} else {
				err = text.ProbeText(w, res)
			}
			if err != nil {
				return err
			}
			return allFailed(res)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.PID, "pid", 0, "process id of the server behind --url, whose memory is sampled")
	f.StringVar(&o.URL, "url", "", "URL to send GET requests to")
	f.IntVarP(&o.Requests, "requests", "n", 100, "number of measured requests (ignored with --duration)")
	f.IntVarP(&o.Concurrency, "concurrency", "c", 1, "number of closed-loop workers, each sending its next request when the last is answered")
	f.DurationVar(&o.Duration, "duration", 0, "run for this long instead of -n requests (for example 30s, 2m)")
	f.Float64Var(&o.Rate, "rate", 0, "cap the total rate at this many requests per second (0: as fast as answered)")
	f.IntVar(&o.Warmup, "warmup", 0, "requests to send first and not measure")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Second, "per-request timeout")
	f.DurationVar(&o.Interval, "interval", 250*time.Millisecond, "memory sampling interval (smaps_rollup costs the target milliseconds per GB; keep it ≥100ms)")
	f.StringArrayVarP(&o.Headers, "header", "H", nil, "extra request header \"Name: value\" (repeatable; values are not saved)")
	f.StringVar(&o.Label, "label", "", "name of this run in the result and in comparisons (for example before, gc-after-request)")
	f.StringVarP(&out, "out", "o", "", "save the result to this `file` (default ./probe-COMM-PID-TIME.json)")
	f.BoolVar(&noSave, "no-save", false, "do not save the result")
	f.BoolVar(&asJSON, "json", false, "print the result (or the comparison) as JSON")
	f.BoolVar(&compare, "compare", false, "compare two saved results A.json B.json instead of probing")
	f.StringVar(&root, "root", "/", "read /proc below this directory (a container's host mount)")
	return cmd
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func defaultProbePath(r *probe.Result) string {
	comm := unsafeName.ReplaceAllString(r.Target.Comm, "_")
	return fmt.Sprintf("probe-%s-%d-%s.json", comm, r.Target.PID, r.Start.Format("20060102-150405"))
}

// allFailed makes a run in which no request succeeded an error: its
// latencies and memory describe error answers, not the server's work.
func allFailed(res *probe.Result) error {
	r := res.Requests
	if r.Total == 0 || r.OK > 0 {
		return nil
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Status)) {
		what := "answered " + k
		if k == "error" {
			what = "got no answer"
		}
		parts = append(parts, fmt.Sprintf("%d %s", r.Status[k], what))
	}
	return fmt.Errorf("every request failed (%s of %d): check --url %s (the measurements describe error answers, not the server's work)",
		strings.Join(parts, ", "), r.Total, res.Settings.URL)
}
