package main

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newReportCmd) }

// reportSummary is what report --json prints about the file it wrote.
type reportSummary struct {
	Output    string                   `json:"output"`
	Bytes     int                      `json:"bytes"`
	Findings  int                      `json:"findings"`
	Charts    int                      `json:"charts"`
	Instances []history.InstanceResult `json:"instances"`
	Source    string                   `json:"source"`
	Seconds   float64                  `json:"seconds"`
}

func newReportCmd() *cobra.Command {
	var (
		src     sourceFlags
		fleetF  fleetFlags
		out     string
		asJSON  bool
		refresh time.Duration
	)
	cmd := &cobra.Command{
		Use:   "report --from SRC -o report.html",
		Short: "Write the diagnosis as one self-contained HTML file, with the charts that prove each finding",
		Long: `report diagnoses SRC exactly as 'memdoctor diagnose' does (same sources, same
--since, --until and --instance) and writes one HTML file that opens offline:
the findings first, by severity, each with the charts that prove it (memory
categories stacked over time, unreclaimable slab against memory cgroups, free
pages against the zone watermarks with reclaim and CPU, process USS/PSS, the
allocator's retained and in-use heap, GC time and collections), its remedies
and commands, then the notes on the data.

Charts are inline SVG drawn from display buckets (the minimum and maximum of
each are kept, so short spikes stay visible); the findings' numbers come from
the full data. The file has no script and fetches nothing; it reads on a
phone and prints cleanly.`,
		Example: `  memdoctor report --from /var/lib/memdoctor/memdoctor.db -o report.html
  memdoctor report --from ./proc-history/ --since -7d -o week.html
  memdoctor report --from fleet-dump.om --instance db7:9100 -o db7.html --json
  memdoctor report --prometheus http://prometheus:9090 --match '{job="node"}' --range 14d -o fleet.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("-o FILE is required: where to write the HTML report ('-' for standard output)")
			}
			start := time.Now()
			var (
				rp  *history.PageReport
				err error
			)
			source := src.from
			if fleetF.prom.url != "" {
				if src.from != "" || src.since != "" || src.instance != "" {
					return errors.New("with --prometheus the range is --range (ending at --until) and one host is --match '{instance=\"HOST\"}'; give no --from, --since or --instance")
				}
				if rp, err = buildFleetPage(cmd, &fleetF, src.until); err != nil {
					return err
				}
				source = fleetF.prom.url
			} else {
				s, err := src.open(cmd)
				if err != nil {
					return err
				}
				defer s.Close()
				if rp, err = history.Page(s, src.since, src.until); err != nil {
					return err
				}
			}
			html, err := rp.Write(out, cmd.OutOrStdout(), refresh)
			if err != nil || out == "-" {
				return err
			}
			results := rp.Instances
			sum := reportSummary{Output: out, Bytes: len(html), Instances: results, Source: source,
				Seconds: time.Since(start).Seconds()}
			for _, r := range results {
				sum.Findings += len(r.Report.Findings)
			}
			sum.Charts = bytes.Count(html, []byte(`<figure class="chart"`))
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), sum)
			}
			text.PageWritten(cmd.OutOrStdout(), out, sum.Findings, sum.Charts, int64(sum.Bytes), sum.Seconds)
			return nil
		},
	}
	src.register(cmd)
	fleetF.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the HTML report to `FILE` ('-' for standard output)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was written (file, size, findings, charts, instances) as JSON")
	cmd.Flags().DurationVar(&refresh, "refresh", 0, "make the page reload itself every `DURATION` (0: never; record --listen's page uses its interval)")
	return cmd
}
