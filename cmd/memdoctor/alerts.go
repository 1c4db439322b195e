package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/alerts"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/source"
	"github.com/memdoctor/memdoctor/internal/store"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newAlertsCmd) }

func newAlertsCmd() *cobra.Command {
	var (
		pf           promFlags
		baselineFrom string
		output       string
		until        string
	)
	cmd := &cobra.Command{
		Use:   "alerts [--baseline-from SRC]",
		Short: "Write Prometheus alerting rules for what memdoctor diagnoses",
		Long: `alerts writes a Prometheus rule file (YAML) with an alert for every
memdoctor rule PromQL can express, using the rules' own thresholds:
dying memory cgroups piling up, unreclaimable slab growing, reclaim
thrashing at the watermarks, garbage collection taking more than 5% of
the time, explicitly induced collections, and memory use above the
median of the last 14 daily peaks.

Without --baseline-from the baseline is a 14-day subquery evaluated by
Prometheus; with it, each host's baseline (median of its daily peaks of
memory use) is computed now from SRC (a Prometheus URL, a recording or
any source diagnose --from reads) and written as a recording rule.
Check the file with: promtool check rules FILE.`,
		Example: `  memdoctor alerts > /etc/prometheus/rules/memdoctor.yml
  memdoctor alerts --match '{job="node"}' -o memdoctor.yml && promtool check rules memdoctor.yml
  memdoctor alerts --baseline-from http://prometheus:9090 -o memdoctor.yml
  memdoctor alerts --baseline-from /var/lib/memdoctor/memdoctor.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := pf.checkMatch(); err != nil {
				return err
			}
			o := alerts.Options{Match: pf.match}
			if baselineFrom != "" {
				var err error
				if strings.HasPrefix(baselineFrom, "http://") || strings.HasPrefix(baselineFrom, "https://") {
					pf.url = baselineFrom
					o.Baselines, err = promBaselines(cmd, &pf, until)
				} else {
					o.Baselines, err = fileBaselines(cmd, baselineFrom)
				}
				if err != nil {
					return fmt.Errorf("--baseline-from %s: %w", baselineFrom, err)
				}
				if len(o.Baselines) == 0 {
					return fmt.Errorf("--baseline-from %s: no host has %d days of memory data for a baseline", baselineFrom, diagnose.Thresholds.BaselineDays)
				}
			}
			y := alerts.YAML(o)
			if output == "" || output == "-" {
				_, err := fmt.Fprint(cmd.OutOrStdout(), y)
				return err
			}
			return os.WriteFile(output, []byte(y), 0o644)
		},
	}
	pf.register(cmd, true)
	_ = cmd.Flags().MarkHidden("prometheus")
	cmd.Flags().StringVar(&baselineFrom, "baseline-from", "", "compute per-host memory baselines from `SRC` (a Prometheus URL, a recording, saved files)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the rules to `FILE` (default stdout)")
	cmd.Flags().StringVar(&until, "until", "", "with a Prometheus SRC: end of the range the baselines are read from")
	return cmd
}

// baselineOf is the median of the daily peaks before the last day, when
// there are enough.
func baselineOf(inst string, peaks []float64) (alerts.Baseline, bool) {
	med, days := diagnose.BaselineOf(peaks)
	if days == 0 || days < diagnose.Thresholds.BaselineDays/2 {
		return alerts.Baseline{}, false
	}
	return alerts.Baseline{Instance: inst, Bytes: med, Days: days}, true
}

func promBaselines(cmd *cobra.Command, pf *promFlags, until string) ([]alerts.Baseline, error) {
	end, r, _, err := pf.window(until)
	if err != nil {
		return nil, err
	}
	c, err := pf.client()
	if err != nil {
		return nil, err
	}
	ctx, endSession := pf.session(cmd, c, nil, "reading the baselines")
	mins, err := fleet.Daily(ctx, c, func(window string) string { return diagnose.DailyMinAvailable(pf.match, window) }, end, r)
	if err != nil {
		return nil, endSession(err)
	}
	totals, err := c.Query(ctx, "max by (instance) (last_over_time("+promql.Selector("node_memory_MemTotal_bytes", pf.match)+"["+fmt.Sprintf("%ds", int64(r/time.Second))+"]))", end)
	if err = endSession(err); err != nil {
		return nil, err
	}
	printWarnings(cmd.ErrOrStderr(), c.Warnings())
	var out []alerts.Baseline
	for _, t := range totals {
		inst := string(t.Labels["instance"])
		var peaks []float64
		for _, a := range mins[inst] {
			peaks = append(peaks, t.Value-a)
		}
		if b, ok := baselineOf(inst, peaks); ok {
			out = append(out, b)
		}
	}
	return out, nil
}

func fileBaselines(cmd *cobra.Command, path string) ([]alerts.Baseline, error) {
	bar := newProgress(cmd.ErrOrStderr(), "reading "+path)
	st, cleanup, _, err := source.OpenStore(path, source.IngestOptions{Progress: bar.update})
	bar.done()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	insts, err := st.Instances()
	if err != nil {
		return nil, err
	}
	var out []alerts.Baseline
	for _, inst := range insts {
		ss, err := st.Select(store.Query{Instance: inst, Names: []string{"node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes"}})
		if err != nil {
			return nil, err
		}
		w := &sample.Window{Instance: inst}
		for _, s := range ss {
			w.Add(s)
		}
		av, tot := w.Get("node_memory_MemAvailable_bytes"), w.Get("node_memory_MemTotal_bytes")
		if av == nil || tot == nil || len(tot.Points) == 0 {
			continue
		}
		total := tot.Points[len(tot.Points)-1].V
		used := make([]float64, len(av.Points))
		for i, p := range av.Points {
			used[i] = total - p.V
		}
		_, peaks := diagnose.DailyPeaks(av.Points, used)
		if b, ok := baselineOf(inst, peaks); ok {
			out = append(out, b)
		}
	}
	if len(insts) == 0 {
		return nil, errors.New("no samples")
	}
	return out, nil
}
