package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/analysis"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/htmlreport"
	"github.com/memdoctor/memdoctor/internal/outfile"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newReportCmd) }

// reportSummary is what report --json prints about the file it wrote.
type reportSummary struct {
	Output    string                    `json:"output"`
	Bytes     int                       `json:"bytes"`
	Findings  int                       `json:"findings"`
	Charts    int                       `json:"charts"`
	Instances []analysis.InstanceResult `json:"instances"`
	Source    string                    `json:"source"`
	Seconds   float64                   `json:"seconds"`
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
				page    *htmlreport.Page
				results []analysis.InstanceResult
				err     error
			)
			source := src.from
			if fleetF.prom.url != "" {
				if src.from != "" || src.since != "" || src.instance != "" {
					return errors.New("with --prometheus the range is --range (ending at --until) and one host is --match '{instance=\"HOST\"}'; give no --from, --since or --instance")
				}
				if page, results, err = buildFleetPage(cmd, &fleetF, src.until); err != nil {
					return err
				}
				source = fleetF.prom.url
			} else {
				s, err := src.open(cmd)
				if err != nil {
					return err
				}
				defer s.Close()
				if page, results, err = analysis.Page(s, src.since, src.until); err != nil {
					return err
				}
			}
			page.Refresh = refresh
			var buf bytes.Buffer
			if err := htmlreport.Render(&buf, page); err != nil {
				return fmt.Errorf("rendering the report: %w", err)
			}
			if out == "-" {
				_, err := cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			if err := writeFileAtomic(out, buf.Bytes()); err != nil {
				return err
			}
			sum := reportSummary{Output: out, Bytes: buf.Len(), Instances: results, Source: source,
				Seconds: time.Since(start).Seconds()}
			for _, r := range results {
				sum.Findings += len(r.Report.Findings)
			}
			sum.Charts = bytes.Count(buf.Bytes(), []byte(`<figure class="chart"`))
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), sum)
			}
			cmd.Printf("wrote %s: %d findings, %d charts, %.1f KiB in %.1f s\n", out, sum.Findings, sum.Charts,
				float64(sum.Bytes)/1024, sum.Seconds)
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

// writeFileAtomic writes data to path through outfile: a new or regular
// file is replaced atomically, so a reader never sees half a report; a
// terminal, /dev/null or a FIFO is written through, never replaced.
func writeFileAtomic(path string, data []byte) error {
	return outfile.WriteBytes(path, 0o644, data)
}

// livePage renders the report of a recording so far, for record --listen,
// in a child process (memdoctor report --from DB): reading a month of
// samples takes far more memory than recording does, and the child gives
// it all back when it exits, so the recorder stays small.
func livePage(db string, refresh time.Duration) func(w io.Writer, instance string) error {
	return func(w io.Writer, instance string) error {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the memdoctor binary to render the page: %w", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, exe, "report", "--from", db, "--instance", instance, "--refresh", refresh.String(), "-o", "-")
		var stderr bytes.Buffer
		c.Stdout, c.Stderr = w, &stderr
		if err := c.Run(); err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return errors.New(msg)
		}
		return nil
	}
}

// liveFindings diagnoses the recording in db as `memdoctor diagnose --json`
// does, in a child process (the recorder's own heap stays small whatever
// the recording's length), and returns the findings.
func liveFindings(db string) func(ctx context.Context, instance string) ([]diagnose.Finding, error) {
	return func(ctx context.Context, instance string) ([]diagnose.Finding, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the memdoctor binary: %w", err)
		}
		c := exec.CommandContext(ctx, exe, "diagnose", "--from", db, "--instance", instance, "--json")
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Run(); err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return nil, errors.New(msg)
		}
		var out struct {
			Findings []diagnose.Finding `json:"findings"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			return nil, fmt.Errorf("reading the diagnosis: %w", err)
		}
		return out.Findings, nil
	}
}
