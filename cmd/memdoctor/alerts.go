package main

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/usecase/prometheus"
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
			var y string
			if baselineFrom == "" {
				y = prometheus.AlertRules(pf.match, nil)
			} else {
				var err error
				var bs []prometheus.Baseline
				if strings.HasPrefix(baselineFrom, "http://") || strings.HasPrefix(baselineFrom, "https://") {
					pf.url = baselineFrom
					bs, err = promBaselines(cmd, &pf, until)
				} else {
					bs, err = prometheus.FileBaselines(baselineFrom, progressBars(cmd))
				}
				if err != nil {
					return fmt.Errorf("--baseline-from %s: %w", baselineFrom, err)
				}
				if len(bs) == 0 {
					return fmt.Errorf("--baseline-from %s: %w", baselineFrom, prometheus.ErrNoBaseline)
				}
				y = prometheus.AlertRules(pf.match, bs)
			}
			if output == "" || output == "-" {
				_, err := fmt.Fprint(cmd.OutOrStdout(), y)
				return err
			}
			return prometheus.WriteAlertRules(output, y)
		},
	}
	pf.register(cmd, true)
	_ = cmd.Flags().MarkHidden("prometheus")
	cmd.Flags().StringVar(&baselineFrom, "baseline-from", "", "compute per-host memory baselines from `SRC` (a Prometheus URL, a recording, saved files)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the rules to `FILE` (default stdout)")
	cmd.Flags().StringVar(&until, "until", "", "with a Prometheus SRC: end of the range the baselines are read from")
	return cmd
}

func promBaselines(cmd *cobra.Command, pf *promFlags, until string) ([]prometheus.Baseline, error) {
	win, err := pf.window(until)
	if err != nil {
		return nil, err
	}
	c, err := prometheus.Connect(pf.server())
	if err != nil {
		return nil, err
	}
	ctx, endSession := pf.session(cmd, c, nil, "reading the baselines")
	bs, err := prometheus.PromBaselines(ctx, c, pf.match, win)
	if err = endSession(err); err != nil {
		return nil, err
	}
	printWarnings(cmd.ErrOrStderr(), c.Warnings())
	return bs, nil
}
