package main

import (
	"fmt"
	"os"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/spf13/cobra"
)

func newExportCmd() *cobra.Command {
	var (
		from, format, out, since, until, instance string
		lenient                                   bool
	)
	cmd := &cobra.Command{
		Use:   "export --from SRC --format openmetrics|parquet",
		Short: "Write recorded or ingested samples as OpenMetrics (for Prometheus backfill) or Parquet",
		Long: `export writes every sample of SRC (anything diagnose --from accepts) with its
timestamp. OpenMetrics output is accepted by
'promtool tsdb create-blocks-from openmetrics FILE DIR', which turns it into
Prometheus blocks; the instance becomes an "instance" label. Parquet output
has one row per sample: instance, name, labels, timestamp_ms, value.`,
		Example: `  memdoctor export --from /var/lib/memdoctor/memdoctor.db --format openmetrics -o host.om
  promtool tsdb create-blocks-from openmetrics host.om ./data
  memdoctor export --from ./proc-history/ --format parquet -o history.parquet --since -7d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return fmt.Errorf("--from is required")
			}
			if format != "openmetrics" && format != "parquet" {
				return fmt.Errorf("--format %q: want openmetrics or parquet", format)
			}
			if out == "" {
				return fmt.Errorf("-o FILE is required (\"-\" for standard output)")
			}
			bar := newProgress(cmd.ErrOrStderr(), "reading "+from)
			s, err := history.OpenAll(from, lenient, bar.update)
			bar.done()
			if err != nil {
				return err
			}
			defer s.Close()
			// What reading left out (dropped NaN samples, skipped lines, a
			// damaged store read with --lenient) is said, not exported in
			// silence.
			for _, n := range s.Notes {
				text.Warnf(cmd.ErrOrStderr(), "memdoctor: note: %s: %s\n", n.Source, n.Message)
			}
			if err := s.Export(out, cmd.OutOrStdout(), format, instance, since, until); err != nil || out == "-" {
				return err
			}
			if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() {
				text.Wrote(cmd.ErrOrStderr(), out, st.Size(), "", "")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "what to export (as for diagnose --from)")
	cmd.Flags().StringVar(&format, "format", "openmetrics", "openmetrics or parquet")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to `FILE` (\"-\" for standard output)")
	cmd.Flags().StringVar(&since, "since", "", "start of the range (RFC 3339, YYYY-MM-DD or -DURATION before the end)")
	cmd.Flags().StringVar(&until, "until", "", "end of the range")
	cmd.Flags().StringVar(&instance, "instance", "", "export only this instance")
	cmd.Flags().BoolVar(&lenient, "lenient", false, "skip malformed input (counted) instead of failing")
	return cmd
}
