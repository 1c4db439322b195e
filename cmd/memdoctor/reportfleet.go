package main

import (
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/htmlreport"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/spf13/cobra"
)

// buildFleetPage scans a fleet through the Prometheus HTTP API exactly as
// diagnose --prometheus does, then reads the charted series of the
// instances with findings (the --top worst) at display resolution. The
// page's findings are the scan's; the charts never feed them.
func buildFleetPage(cmd *cobra.Command, f *fleetFlags, until string) (*htmlreport.Page, []instanceResult, error) {
	end, r, step, err := f.prom.window(until)
	if err != nil {
		return nil, nil, err
	}
	c, err := f.prom.client()
	if err != nil {
		return nil, nil, err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(fleetMemoryLimit)
	}
	bar := newProgress(cmd.ErrOrStderr(), "scanning "+c.URL())
	ctx, endSession := f.prom.session(cmd, c, bar, "scanning the fleet")
	defer endSession(nil) //nolint:errcheck // ends the session; errors are ended explicitly
	res, err := fleet.Scan(ctx, c, fleet.Options{Match: f.prom.match, End: end, Range: r, Step: step, By: f.by, All: f.all, Progress: bar.update})
	bar.done()
	if err != nil {
		return nil, nil, endSession(err)
	}
	printWarnings(cmd.ErrOrStderr(), res.Warnings)

	var shown []*fleet.Instance
	affected := 0
	for _, in := range res.Instances { // ranked worst first
		if len(in.Findings) == 0 {
			continue
		}
		affected++
		if len(shown) < f.top {
			shown = append(shown, in)
		}
	}
	page := &htmlreport.Page{Source: c.URL(), Generated: time.Now()}
	page.Summary = append(page.Summary, fmt.Sprintf("%d instances scanned with %d aggregated queries; %d suspects read in full; %d with findings%s.",
		len(res.Instances), res.Cost.ScanQueries, res.Suspects, affected, shownText(len(shown), affected)))
	for _, co := range res.Correlation {
		if co.Summary != "" {
			page.Summary = append(page.Summary, co.Summary)
		}
	}
	if len(shown) == 0 {
		return page, nil, nil
	}
	names := make([]string, 0, len(htmlreport.SeriesNames()))
	for _, n := range htmlreport.SeriesNames() {
		names = append(names, regexp.QuoteMeta(n))
	}
	var insts []string
	for _, in := range shown {
		insts = append(insts, in.Instance)
	}
	chartStep := max(step, (r / time.Duration(2*htmlreport.Buckets(false))).Truncate(time.Second))
	bar = newProgress(cmd.ErrOrStderr(), "reading the charted series")
	windows, err := fleet.FetchWindows(ctx, c, insts, f.prom.match, strings.Join(names, "|"), res.From, res.To, chartStep)
	err = endSession(err)
	bar.done()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the charted series: %w", err)
	}
	var results []instanceResult
	for _, in := range shown {
		w := windows[in.Instance]
		if w == nil {
			w = &sample.Window{Instance: in.Instance, From: res.From, To: res.To, Step: chartStep}
		}
		rep := &diagnose.Report{SchemaVersion: diagnose.SchemaVersion, Findings: in.Findings, Notes: in.Notes}
		page.Instances = append(page.Instances, htmlreport.Instance{Name: in.Instance, From: res.From, To: res.To,
			Step: time.Duration(res.StepSeconds * float64(time.Second)), Series: in.Series, Report: rep, Window: w})
		results = append(results, instanceResult{Instance: in.Instance, From: res.From, To: res.To,
			StepSeconds: res.StepSeconds, Series: in.Series, report: rep})
	}
	return page, results, nil
}

func shownText(shown, affected int) string {
	if shown < affected {
		return fmt.Sprintf(" (the %d worst shown; --top to see more)", shown)
	}
	return ""
}
