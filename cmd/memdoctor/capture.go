package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/procfs"
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
			live := procfs.NewFS("/")
			rec := capture.NewRecorder(live.Sys(), capture.RecordOptions{})
			fsys := procfs.NewFSFrom(rec, live.PageSize)
			res, err := collect.Collect(fsys, collect.Options{TopProcesses: top, TopCgroups: top, ArenaScan: true, Live: true})
			if err != nil {
				return err
			}
			prov := capture.Provenance{
				PageSize: live.PageSize,
				Time:     res.Scrape.Time.UTC().Truncate(time.Second),
				Tool:     "memdoctor " + buildInfo().Version,
				Note:     note,
				Arch:     runtime.GOARCH,
			}
			if u := res.Scrape.Select("node_uname_info"); len(u) > 0 {
				prov.Kernel = u[0].Labels.Get("release")
				if m := u[0].Labels.Get("machine"); m != "" {
					prov.Arch = m
				}
			}
			if c := res.Scrape.Select("memdoctor_cgroup_info"); len(c) > 0 && c[0].Labels.Get("mode") != "none" {
				prov.CgroupMode = c[0].Labels.Get("mode")
			}
			if g := res.Scrape.Select("memdoctor_glibc_info"); len(g) > 0 {
				prov.Glibc = g[0].Labels.Get("banner")
			}
			contents := rec.Contents()
			wopt := capture.WriteOptions{NoRedact: noRedact}
			if out == "-" {
				return capture.Write(cmd.OutOrStdout(), prov, contents, wopt)
			}
			if out == "" {
				host := "host"
				if u := res.Scrape.Select("node_uname_info"); len(u) > 0 && u[0].Labels.Get("nodename") != "" {
					host = diagnose.HostName(u[0].Labels.Get("nodename"))
				}
				out = fmt.Sprintf("memdoctor-%s-%s.txtar", sanitize(host), prov.Time.Format("20060102T150405Z"))
			}
			// Written to a temporary file and renamed: an interrupted capture
			// never leaves a truncated archive under the final name.
			if err := capture.WriteFile(out, prov, contents, wopt); err != nil {
				return fmt.Errorf("writing capture: %w", err)
			}
			size := int64(0)
			if st, err := os.Stat(out); err == nil {
				size = st.Size()
			}
			redacted := "command lines cut to the program name"
			if noRedact {
				redacted = "command lines kept whole (--no-redact)"
			}
			cmd.PrintErrf("wrote %s (%d files, %s; %s)\n", out, len(contents.Files), humanSize(size), redacted)
			for _, n := range res.Notes {
				cmd.PrintErrf("note: %s: %s\n", n.Source, n.Message)
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

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r < 32 {
			return '_'
		}
		return r
	}, s)
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
