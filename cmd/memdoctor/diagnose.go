package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/report"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/source"
	"github.com/memdoctor/memdoctor/internal/store"
	"github.com/spf13/cobra"
)

// targetPoints is how many points per series a diagnosis reads at most: the
// step grows with the range (findings' numbers come from the aggregates of
// every raw sample, never from dropped ones).
const targetPoints = 4000

// parseWhen reads --since/--until: RFC 3339, a date, or a duration before
// the end of the data ("-7d", "-12h").
func parseWhen(s string, end time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := parseRetention(s[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: want RFC 3339, YYYY-MM-DD or -DURATION (-7d, -12h)", s)
		}
		return end.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339, YYYY-MM-DD or -DURATION (-7d, -12h)", s)
}

// parseRange reads --since and --until against the end of the data. A
// start after the end is an inverted range, said as such (not as a range
// that "holds no data").
func parseRange(since, until string, end time.Time) (f, u time.Time, err error) {
	if f, err = parseWhen(since, end); err != nil {
		return f, u, fmt.Errorf("--since %w", err)
	}
	if u, err = parseWhen(until, end); err != nil {
		return f, u, fmt.Errorf("--until %w", err)
	}
	if !f.IsZero() && !u.IsZero() && f.After(u) {
		return f, u, fmt.Errorf("inverted range: --since %s (%s) is after --until %s (%s); swap them",
			since, f.UTC().Format(time.RFC3339), until, u.UTC().Format(time.RFC3339))
	}
	return f, u, nil
}

// instanceResult is one instance's diagnosis.
type instanceResult struct {
	Instance string    `json:"instance"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	// StepSeconds is the resolution rules saw (0: raw samples).
	StepSeconds float64 `json:"step_seconds"`
	Series      int     `json:"series"`
	report      *diagnose.Report
}

// diagnoseOutput is the JSON document: the check shape (host, accounting,
// zones, ... of the single instance's last state) plus every instance's
// findings and notes, and what data each instance had.
type diagnoseOutput struct {
	*diagnose.Report
	Instances []instanceResult `json:"instances"`
	Source    string           `json:"source"`
}

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
			st, cleanup, instances, notes, err := src.open(cmd)
			if err != nil {
				return err
			}
			defer cleanup()
			var results []instanceResult
			for _, inst := range instances {
				r, err := diagnoseInstance(st, inst, src.since, src.until, notes, src.from, len(instances) > 1)
				if err != nil {
					return fmt.Errorf("instance %s: %w", inst, err)
				}
				results = append(results, r)
			}
			out := merge(results, src.from)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			return report.DiagnoseText(cmd.OutOrStdout(), out.Report, toSummaries(results), report.TextOptions{Color: colorOK(cmd.OutOrStdout())})
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

// open opens the source as a store and lists the instances to read, with
// the notes reading it gave.
func (f *sourceFlags) open(cmd *cobra.Command) (st *store.Store, cleanup func(), instances []string, notes []sample.Note, err error) {
	if f.from == "" {
		return nil, nil, nil, nil, errors.New("--from is required: a recording, a directory of saved /proc files or captures, or an OpenMetrics file")
	}
	bar := newProgress(cmd.ErrOrStderr(), "reading "+f.from)
	st, cleanup, ist, err := source.OpenStore(f.from, source.IngestOptions{Lenient: f.lenient, Progress: bar.update})
	bar.done()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	instances, err = st.Instances()
	if err != nil {
		cleanup()
		return nil, nil, nil, nil, err
	}
	if f.instance != "" {
		found := false
		for _, i := range instances {
			found = found || i == f.instance
		}
		if !found {
			cleanup()
			return nil, nil, nil, nil, fmt.Errorf("--instance %q: not in %s (it has: %s)", f.instance, f.from, strings.Join(instances, ", "))
		}
		instances = []string{f.instance}
	}
	if len(instances) == 0 {
		cleanup()
		return nil, nil, nil, nil, fmt.Errorf("%s holds no samples", f.from)
	}
	return st, cleanup, instances, ist.Notes, nil
}

// from is the --from argument and multi says whether the data holds several
// instances: the findings' follow-up commands name both, to paste as they are.
func diagnoseInstance(st *store.Store, inst, since, until string, ingestNotes []sample.Note, from string, multi bool) (instanceResult, error) {
	first, last, err := st.TimeRange(inst)
	if err != nil {
		return instanceResult{}, err
	}
	f, u, err := parseRange(since, until, last)
	if err != nil {
		return instanceResult{}, err
	}
	if f.IsZero() || f.Before(first) {
		f = first
	}
	if u.IsZero() || u.After(last) {
		u = last
	}
	if !u.After(f) && !u.Equal(f) {
		return instanceResult{}, fmt.Errorf("the range %s … %s holds no data (the data spans %s … %s)", f.Format(time.RFC3339), u.Format(time.RFC3339), first.Format(time.RFC3339), last.Format(time.RFC3339))
	}
	step := u.Sub(f) / targetPoints
	if step < time.Second {
		step = 0
	} else {
		step = step.Round(time.Second)
	}
	series, err := st.Select(store.Query{Instance: inst, Names: diagnose.WindowSeries(diagnose.Rules()), From: f, To: u, Step: step})
	if err != nil {
		return instanceResult{}, err
	}
	w := &sample.Window{Instance: inst, From: f, To: u, Step: step}
	for _, s := range series {
		w.Add(s)
	}
	latest, err := st.Latest(inst, u, 3*max(step, time.Minute))
	if err != nil {
		return instanceResult{}, err
	}
	rep := diagnose.CheckRecording(latest, w, "store", ingestNotes)
	if multi {
		rep.FitSource(from, inst)
	} else {
		rep.FitSource(from, "")
	}
	return instanceResult{Instance: inst, From: f, To: u, StepSeconds: step.Seconds(), Series: len(series), report: rep}, nil
}

// merge combines instances: the check shape of the only (or first)
// instance, with every instance's findings and notes.
func merge(rs []instanceResult, src string) diagnoseOutput {
	out := diagnoseOutput{Report: rs[0].report, Instances: rs, Source: src}
	if len(rs) == 1 {
		return out
	}
	merged := *rs[0].report
	merged.Findings = nil
	merged.Notes = nil
	for _, r := range rs {
		merged.Findings = append(merged.Findings, r.report.Findings...)
		for _, n := range r.report.Notes {
			n.Source = r.Instance + ": " + n.Source
			merged.Notes = append(merged.Notes, n)
		}
	}
	diagnose.SortFindings(merged.Findings)
	var names []string
	var covs []diagnose.Coverage
	for _, r := range rs {
		names = append(names, r.Instance)
		covs = append(covs, r.report.Coverage)
	}
	merged.Coverage = diagnose.MergeCoverage(names, covs)
	out.Report = &merged
	return out
}

func toSummaries(rs []instanceResult) []report.WindowSummary {
	var out []report.WindowSummary
	for _, r := range rs {
		out = append(out, report.WindowSummary{Instance: r.Instance, From: r.From, To: r.To, Step: time.Duration(r.StepSeconds * float64(time.Second)), Series: r.Series, Findings: len(r.report.Findings)})
	}
	return out
}
