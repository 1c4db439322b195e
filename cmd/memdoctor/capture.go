package main

import (
	"fmt"
	"os"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/live"
	"github.com/spf13/cobra"
)

func newCaptureCmd() *cobra.Command {
	var (
		out      string
		noRedact bool
		top      int
		note     string
	)
	cmd := &cobra.Command{
		Use:   "capture [-o FILE]",
		Short: "Save every file memdoctor reads into one archive, for later or for someone else",
		Long: `capture reads the host exactly as 'check' does and saves every file it read
(meminfo, vmstat, zoneinfo, slabinfo, cgroups, PSI, sysctls, the largest
processes' status/smaps_rollup/maps, ...) into one text archive (txtar) with a
provenance header: kernel, architecture, page size, cgroup mode, glibc, time.

Any read command replays it with --capture FILE. Command lines are cut to the
program name and environments are never saved, unless --no-redact keeps the
command lines whole.`,
		Example: `  memdoctor capture                       # writes memdoctor-HOST-TIME.txtar
  memdoctor capture -o /tmp/db1.txtar --note "before the kernel upgrade"
  memdoctor check --capture /tmp/db1.txtar`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkTop(top); err != nil {
				return err
			}
			c, err := live.Capture(top, note, "memdoctor "+buildInfo().Version, noRedact, out, cmd.OutOrStdout())
			if err != nil || c.Path == "" {
				return err
			}
			size := int64(0)
			if st, err := os.Stat(c.Path); err == nil {
				size = st.Size()
			}
			redacted := "command lines cut to the program name"
			if noRedact {
				redacted = "command lines kept whole (--no-redact)"
			}
			text.Wrote(cmd.ErrOrStderr(), c.Path, size, fmt.Sprintf("%d files, ", c.Files), "; "+redacted)
			for _, n := range c.Notes {
				cmd.PrintErrf("note: %s\n", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the archive to `FILE` (\"-\" for standard output; default memdoctor-HOST-TIME.txtar)")
	cmd.Flags().BoolVar(&noRedact, "no-redact", false, "keep process command lines whole (they may hold secrets)")
	cmd.Flags().IntVar(&top, "top", 10, "how many processes and cgroups to capture in detail")
	cmd.Flags().StringVar(&note, "note", "", "a note to store in the provenance header")
	return cmd
}
