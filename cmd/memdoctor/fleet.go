package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/termsafe"
	"github.com/spf13/cobra"
)

// fleetFlags are diagnose's options for a Prometheus fleet scan.
type fleetFlags struct {
	prom promFlags
	by   []string
	all  bool
	top  int
}

func (f *fleetFlags) register(cmd *cobra.Command) {
	f.prom.register(cmd, true)
	cmd.Flags().StringSliceVar(&f.by, "by", nil, "with --prometheus: also correlate findings with these `LABELS` (rack, dc, ...)")
	cmd.Flags().BoolVar(&f.all, "all", false, "with --prometheus: fetch and diagnose every instance, not only the pre-filter's suspects (slow)")
	cmd.Flags().IntVar(&f.top, "top", 20, "with --prometheus: show this many instances")
}

// fleetMemoryLimit is the soft heap limit of a fleet scan.
const fleetMemoryLimit = 128 << 20

// runFleet is `diagnose --prometheus`.
func runFleet(cmd *cobra.Command, f *fleetFlags, until string, asJSON bool) error {
	end, r, step, err := f.prom.window(until)
	if err != nil {
		return err
	}
	c, err := f.prom.client()
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// Suspects' windows come and go: collect more often rather than
		// let the heap grow with a large fleet.
		debug.SetMemoryLimit(fleetMemoryLimit)
	}
	bar := newProgress(cmd.ErrOrStderr(), "fetching suspects from "+c.URL())
	ctx, endSession := f.prom.session(cmd, c, bar, "scanning the fleet")
	res, err := fleet.Scan(ctx, c, fleet.Options{Match: f.prom.match, End: end, Range: r, Step: step, By: f.by, All: f.all, Progress: bar.update})
	err = endSession(err)
	bar.done()
	if err != nil {
		return err
	}
	printWarnings(cmd.ErrOrStderr(), res.Warnings)
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), res)
	}
	return fleetText(cmd.OutOrStdout(), res, f.top)
}

func fleetText(out io.Writer, res *fleet.Result, top int) error {
	w := bufio.NewWriter(out)
	pf := func(format string, a ...any) { _, _ = termsafe.Fprintf(w, format, a...) } // bufio keeps the first error for Flush
	pf("memdoctor diagnose: %d instances at %s, %s … %s\n", len(res.Instances), res.Source,
		res.From.UTC().Format("2006-01-02 15:04"), res.To.UTC().Format("2006-01-02 15:04"))
	pf("scan: %d aggregated queries; %d suspects fetched in full (step %gs); %d queries, %s received in %.1fs\n",
		res.Cost.ScanQueries, res.Suspects, res.StepSeconds, res.Cost.Queries, diagnose.HumanBytes(res.Cost.WireBytes), res.Cost.DurationSeconds)
	affected := 0
	for _, in := range res.Instances {
		if len(in.Findings) > 0 {
			affected++
		}
	}
	pf("\nFINDINGS (%d instances)\n", affected)
	shown := 0
	for _, in := range res.Instances {
		if len(in.Findings) == 0 || shown >= top {
			continue
		}
		shown++
		var ids []string
		for _, f := range in.Findings {
			ids = append(ids, f.ID)
		}
		pf("  %-8s %s  %s  %s\n", in.Severity, in.Instance, in.Labels["release"], strings.Join(ids, ", "))
		for _, f := range in.Findings {
			pf("           %s\n", f.Summary)
		}
	}
	if affected > shown {
		pf("  … %d more (--top, or --json)\n", affected-shown)
	}
	var errs []string
	for _, in := range res.Instances {
		if in.Error != "" {
			errs = append(errs, in.Instance+": "+in.Error)
		}
	}
	if len(res.Correlation) > 0 {
		pf("\nCORRELATIONS\n")
		for _, c := range res.Correlation {
			pf("  %s\n", c.Summary)
		}
	}
	var quiet []string
	for _, in := range res.Instances {
		if in.Suspect && len(in.Findings) == 0 && in.Error == "" {
			quiet = append(quiet, in.Instance)
		}
	}
	if len(quiet) > 0 {
		sort.Strings(quiet)
		pf("\nsuspects the rules cleared: %d (%s)\n", len(quiet), listN(quiet, 8))
	}
	if len(errs) > 0 {
		pf("\nERRORS\n  %s\n", strings.Join(errs, "\n  "))
	}
	if len(res.Warnings) > 0 {
		pf("\nWARNINGS (partial data)\n  %s\n", strings.Join(res.Warnings, "\n  "))
	}
	return w.Flush()
}

func listN(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", … %d more", len(xs)-n)
}
