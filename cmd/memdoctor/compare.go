package main

import (
	"errors"
	"fmt"

	"github.com/memdoctor/memdoctor/internal/probe"
	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/memdoctor/memdoctor/internal/usecase/prometheus"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newCompareCmd) }

func newCompareCmd() *cobra.Command {
	var (
		pf         promFlags
		selA, selB string
		winA, winB string
		until      string
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "compare [A B | SRC --a-window … --b-window …]",
		Short: "Compare two groups of hosts, two recordings, two time windows or two probe results, with a verdict",
		Long: `compare turns an experiment into a verdict. The groups are any of:

  label selectors over Prometheus (--prometheus URL --a SEL --b SEL): each
    host's values over --range; a host is in a group when its
    node_uname_info or node_memory_MemTotal_bytes matches the selector, so
    '{release=~"5.0.*"}' selects by kernel;
  two recordings or other sources (compare A B), each as diagnose --from
    reads them;
  two time windows of one source (compare SRC --a-window FROM/TO
    --b-window FROM/TO);
  two probe results (compare before.json after.json), recognised by the
    "kind" of the JSON document.

For unreclaimable slab growth per day, memory-cgroup growth per day,
available memory and the recorded processes' USS it shows the values,
the difference of the medians (B − A) with a bootstrap 95% interval
(seeded: the same data gives the same interval) and a plain verdict. The
values are hosts; when a group is a single host, its days.

Recordings and other sources also give the reclaim counters
(kswapd_low_wmark_hit_quickly, allocstall, pgscan_direct) per day over
the span diagnose judges them over (since the last change of
watermark_scale_factor); for a single host the values are six
equal parts of that span, and a note gives each recording's counts and
span (and says when it is too short for daily rates).`,
		Example: `  memdoctor compare --prometheus http://prom:9090 --a '{release=~"5.0.*"}' --b '{release=~"5.3.*"}' --range 7d
  memdoctor compare rack1.db rack2.db
  memdoctor compare host.db --a-window 2020-01-01/2020-01-08 --b-window 2020-01-08/2020-01-15 --json
  memdoctor compare before.json after.json`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			show := printed(cmd.OutOrStdout(), asJSON, text.CompareText)
			switch {
			case pf.url != "":
				if len(args) > 0 || winA != "" {
					return errors.New("with --prometheus the groups are --a and --b selectors; give no files or windows")
				}
				if selA == "" || selB == "" {
					return errors.New("--prometheus needs --a and --b label selectors, e.g. --a '{rack=\"r1\"}' --b '{rack=\"r2\"}'")
				}
				return comparePrometheus(cmd, &pf, selA, selB, until, asJSON)
			case len(args) == 2 && probe.IsResult(args[0]) && probe.IsResult(args[1]):
				return compareProbes(cmd, args[0], args[1], asJSON)
			case len(args) == 2:
				return show(history.CompareSources(args[0], "", args[1], "", progressBars(cmd)))
			case len(args) == 1:
				if winA == "" || winB == "" {
					return errors.New("one source needs two windows: --a-window FROM/TO --b-window FROM/TO")
				}
				return show(history.CompareSources(args[0], winA, args[0], winB, progressBars(cmd)))
			default:
				return errors.New("give two groups: --prometheus URL --a SEL --b SEL, two sources, one source with --a-window and --b-window, or two probe results")
			}
		},
	}
	pf.register(cmd, true)
	cmd.Flags().StringVar(&selA, "a", "", "with --prometheus: label `SELECTOR` of group A (control)")
	cmd.Flags().StringVar(&selB, "b", "", "with --prometheus: label `SELECTOR` of group B (experiment)")
	cmd.Flags().StringVar(&winA, "a-window", "", "time window `FROM/TO` of group A in a single source")
	cmd.Flags().StringVar(&winB, "b-window", "", "time window `FROM/TO` of group B in a single source")
	cmd.Flags().StringVar(&until, "until", "", "with --prometheus: end of the range (RFC 3339, a date or -DURATION; default now)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return cmd
}

// comparePrometheus compares the hosts of two selectors and shows the
// result.
func comparePrometheus(cmd *cobra.Command, pf *promFlags, a, b, until string, asJSON bool) error {
	win, err := pf.window(until)
	if err != nil {
		return err
	}
	for _, s := range []struct {
		flag string
		sel  *string
	}{{"--a", &a}, {"--b", &b}} {
		m, err := prometheus.ParseMatch(*s.sel)
		if err != nil {
			return fmt.Errorf("%s %q: %w", s.flag, *s.sel, err)
		}
		*s.sel = m
	}
	c, err := prometheus.Connect(pf.server())
	if err != nil {
		return err
	}
	ctx, endSession := pf.session(cmd, c, nil, "comparing the groups")
	res, err := prometheus.ComparePrometheus(ctx, c, a, b, pf.match, win)
	if err = endSession(err); err != nil {
		return err
	}
	printWarnings(cmd.ErrOrStderr(), c.Warnings())
	return printed(cmd.OutOrStdout(), asJSON, text.CompareText)(res, nil)
}

// compareProbes compares two probe results (memory and latency
// percentiles side by side): the one place probe results are dispatched.
func compareProbes(cmd *cobra.Command, a, b string, asJSON bool) error {
	ra, err := probe.Load(a)
	if err != nil {
		return err
	}
	rb, err := probe.Load(b)
	if err != nil {
		return err
	}
	c := probe.Compare(ra, rb)
	if asJSON {
		return c.WriteJSON(cmd.OutOrStdout())
	}
	return text.ProbeCompareText(cmd.OutOrStdout(), c)
}
