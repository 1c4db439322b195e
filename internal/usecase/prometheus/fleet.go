package prometheus

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/render/html"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
)

// Fleet is a scan of the fleet behind a Prometheus server.
type Fleet struct {
	Client *prom.Client
	// Match is the canonical label selector every series must match.
	Match  string
	Window history.Window
	// By are labels to correlate findings with; All skips the pre-filter.
	By  []string
	All bool
	// Resume names a checkpoint file: the instances it holds are not
	// judged again, and each judged one is added to it (fleet.Checkpoint).
	Resume string
}

// Scan diagnoses the fleet: aggregated queries score every instance, the
// suspects' full ranges are fetched at the window's step and judged.
func (f *Fleet) Scan(ctx context.Context, progress history.Progress) (*fleet.Result, error) {
	o := fleet.Options{Match: f.Match, End: f.Window.To, Range: f.Window.Range(),
		Step: f.Window.Step, By: f.By, All: f.All, Progress: progress}
	if f.Resume != "" {
		cp, err := fleet.OpenCheckpoint(f.Resume, f.CheckpointScan())
		if err != nil {
			return nil, err
		}
		defer cp.Close() //nolint:errcheck // every line was synced as it was written
		o.Checkpoint = cp
		res, err := fleet.Scan(ctx, f.Client, o)
		if err != nil && cp.Held() > 0 {
			return nil, &StoppedError{Err: err, File: f.Resume, Held: cp.Held()}
		}
		return res, err
	}
	return fleet.Scan(ctx, f.Client, o)
}

// CheckpointScan is what a checkpoint of this scan must have been made by.
func (f *Fleet) CheckpointScan() fleet.CheckpointScan {
	return fleet.CheckpointScan{Source: f.Client.URL(), Match: f.Match, From: f.Window.To.Add(-f.Window.Range()), To: f.Window.To,
		Step: f.Window.Step.Seconds(), All: f.All}
}

// StoppedError is a scan with a checkpoint that did not finish: what it
// judged is in File for the same command to resume.
type StoppedError struct {
	Err  error
	File string
	Held int
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("%v\n%d judged instances are kept in %s: the same command with --resume %s goes on from there",
		e.Err, e.Held, e.File, model.ShellArg(e.File))
}

func (e *StoppedError) Unwrap() error { return e.Err }

// Shown are the instances with findings, worst first, at most top of
// them, and how many have findings in all.
func Shown(res *fleet.Result, top int) (shown []*fleet.Instance, affected int) {
	for _, in := range res.Instances { // ranked worst first
		if len(in.Findings) == 0 {
			continue
		}
		affected++
		if len(shown) < top {
			shown = append(shown, in)
		}
	}
	return shown, affected
}

// FleetPage is the report page of a scan: its summary, and the top worst
// instances with findings, each with its charted series read at display
// resolution (the page's findings are the scan's; the charts never feed
// them). charting is called before the series are read; an error reading
// them is returned as the client gave it.
func (f *Fleet) FleetPage(ctx context.Context, res *fleet.Result, top int, charting func()) (*history.PageReport, error) {
	shown, affected := Shown(res, top)
	page := &html.Page{Source: f.Client.URL(), Generated: time.Now()}
	page.Summary = append(page.Summary, fmt.Sprintf("%d instances scanned with %d aggregated queries; %d suspects read in full; %d with findings%s.",
		len(res.Instances), res.Cost.ScanQueries, res.Suspects, affected, shownText(len(shown), affected)))
	for _, co := range res.Correlation {
		if co.Summary != "" {
			page.Summary = append(page.Summary, co.Summary)
		}
	}
	page.Fleet = fleetIndex(res, f.Client.URL())
	if len(shown) == 0 {
		return &history.PageReport{Page: page}, nil
	}
	names := make([]string, 0, len(html.SeriesNames()))
	for _, n := range html.SeriesNames() {
		names = append(names, regexp.QuoteMeta(n))
	}
	var insts []string
	for _, in := range shown {
		insts = append(insts, in.Instance)
	}
	step := max(f.Window.Step, history.ChartStep(f.Window.Range(), html.Buckets(false)))
	if charting != nil {
		charting()
	}
	containers, err := fleet.HasContainers(ctx, f.Client, f.Match, res.From, res.To)
	if err != nil {
		return nil, err
	}
	windows, err := fleet.FetchWindows(ctx, f.Client, insts, f.Match, strings.Join(names, "|"), res.From, res.To, step, containers)
	if err != nil {
		return nil, err
	}
	var results []history.InstanceResult
	for _, in := range shown {
		w := windows[in.Instance]
		if w == nil {
			w = &sample.Window{Instance: in.Instance, From: res.From, To: res.To, Step: step}
		}
		rep := &model.Report{SchemaVersion: model.SchemaVersion, Findings: in.Findings, Notes: in.Notes}
		r := history.InstanceResult{Instance: in.Instance, From: res.From, To: res.To, StepSeconds: res.StepSeconds, Series: in.Series, Report: rep}
		page.Instances = append(page.Instances, html.Instance{Name: in.Instance, From: res.From, To: res.To,
			Step: r.Step(), Series: in.Series, Report: rep, Window: w})
		results = append(results, r)
	}
	return &history.PageReport{Page: page, Instances: results}, nil
}

func shownText(shown, affected int) string {
	if shown < affected {
		return fmt.Sprintf(" (the %d worst shown; --top to see more)", shown)
	}
	return ""
}

// fleetIndex is the page's index of every instance with findings, in the
// scan's order (worst first).
func fleetIndex(res *fleet.Result, url string) *html.Fleet {
	ix := &html.Fleet{Scanned: len(res.Instances),
		Command: "memdoctor diagnose --prometheus " + model.ShellArg(url) + ` --match '{instance="INSTANCE"}'`}
	for _, in := range res.Instances {
		if len(in.Findings) > 0 {
			ix.Hosts = append(ix.Hosts, html.FleetHost{Name: in.Instance, Findings: in.Findings})
		}
	}
	return ix
}
