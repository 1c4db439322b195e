package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/heapprof"
	"github.com/memdoctor/memdoctor/internal/malloc"
	"github.com/memdoctor/memdoctor/internal/outfile"
	"github.com/memdoctor/memdoctor/internal/termsafe"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newLeaksCmd) }

func newLeaksCmd() *cobra.Command {
	var (
		asJSON   bool
		output   string
		interval time.Duration
		top      int
		timeout  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "leaks PID",
		Short: "Show which code holds a process' heap: sampled allocation sites by bytes in use and by growth",
		Long: `leaks reads the heap profile that memdoctor's preload library writes for a
process started with it and MEMDOCTOR_PROFILE=RATE: about one allocation per
RATE bytes allocated is sampled with its call stack, and its free matched,
so the profile tells the bytes each call stack still holds (estimates
scaled from the samples; at 512KiB within a few percent for sites holding
tens of MiB). The stacks are named from the process' own ELF symbol tables.

  LD_PRELOAD=$(memdoctor preload --print-path) MEMDOCTOR_PROFILE=512KiB \
    MEMDOCTOR_PROFILE_PATH=/var/tmp/heap.%p ./server

The library rewrites the profile every MEMDOCTOR_PROFILE_INTERVAL (10s) and
at exit. With --interval, leaks reads the profile, waits for one written at
least that much later, and ranks the sites by their growth in between: a
leak grows, a cache that is full does not. --output writes the profile in
pprof's format (go tool pprof, speedscope and Pyroscope read it).`,
		Example: `  memdoctor leaks 4242
  memdoctor leaks 4242 --interval 5m                  # what grew in 5 minutes
  memdoctor leaks 4242 --output heap.pb.gz && go tool pprof -top heap.pb.gz
  memdoctor leaks 4242 --json | jq '.sites[0]'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := mallocPID(args[0])
			if err != nil {
				return err
			}
			if interval < 0 || top <= 0 || timeout <= 0 {
				return fmt.Errorf("--interval, --top and --timeout: want positive values")
			}
			ctx, stop := mallocContext()
			defer stop()
			first, d, err := readLeakDump(ctx, pid, timeout)
			if err != nil {
				return err
			}
			var base *heapprof.Dump
			if interval > 0 {
				base = d
				if first, d, err = waitLeakDump(ctx, pid, base.Time.Add(interval), interval, timeout); err != nil {
					return err
				}
			}
			sym := heapprof.NewSymbolizer(first.Open)
			rep := heapprof.NewReport(sym, d, base)
			if output != "" {
				p := heapprof.Profile(sym, d)
				if err := outfile.Write(output, 0o644, p.Write); err != nil {
					return fmt.Errorf("writing %s: %w", output, err)
				}
				rep.ProfileFile = output
			}
			if len(rep.Sites) > top {
				rep.Sites = rep.Sites[:top]
			}
			if len(rep.Growth) > top {
				rep.Growth = rep.Growth[:top]
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return leaksText(cmd.OutOrStdout(), first.Path, rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (a stable interface)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "also write the profile to this file in pprof's format (gzipped protobuf, .pb.gz)")
	cmd.Flags().DurationVar(&interval, "interval", 0, "rank the sites by their growth over this time (waits for a profile written that much later)")
	cmd.Flags().IntVar(&top, "top", 10, "sites to show")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "bound on reading a profile, and on waiting past --interval for the next one")
	return cmd
}

// readLeakDump reads and parses the process' current profile.
func readLeakDump(ctx context.Context, pid int, timeout time.Duration) (*malloc.HeapProfile, *heapprof.Dump, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hp, err := malloc.ReadHeapProfile(rctx, pid)
	if err != nil {
		return nil, nil, err
	}
	d, err := heapprof.Parse(hp.Data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", hp.Path, err)
	}
	return hp, d, nil
}

// waitLeakDump waits until the process has written a profile at or after
// after, for at most interval plus timeout and the library's own period.
func waitLeakDump(ctx context.Context, pid int, after time.Time, interval, timeout time.Duration) (*malloc.HeapProfile, *heapprof.Dump, error) {
	deadline := time.Now().Add(interval + timeout)
	if w := time.Until(after); w > 0 {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(w):
		}
	}
	for {
		hp, d, err := readLeakDump(ctx, pid, timeout)
		switch {
		case err == nil && !d.Time.Before(after):
			return hp, d, nil
		case err != nil && !errors.Is(err, heapprof.ErrFormat):
			return nil, nil, err
		case time.Now().After(deadline):
			return nil, nil, fmt.Errorf("pid %d wrote no heap profile after %s within %s: set MEMDOCTOR_PROFILE_INTERVAL below --interval, or give more --timeout", pid, after.Format(time.RFC3339), timeout)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func leaksText(w io.Writer, path string, r *heapprof.Report) error {
	hb := diagnose.HumanBytes
	pf := func(format string, a ...any) { _, _ = termsafe.Fprintf(w, format, a...) }
	pf("pid %d, heap profile %s written %s: %s in use in sampled sites (one sample per %s allocated, %d samples",
		r.PID, path, r.Time.Format(time.RFC3339), hb(r.InUseBytes), hb(int64(r.Rate)), r.Samples)
	if r.Dropped > 0 {
		pf(", %d not followed: the table was full", r.Dropped)
	}
	pf(")\n\nby bytes in use:\n")
	for _, s := range r.Sites {
		pf("  %10s %5.1f%%  %s\n", hb(s.InUseBytes), 100*s.Share, s.Title(4))
	}
	if !r.Base.IsZero() {
		pf("\ngrowth over %s: %s\n", r.Time.Sub(r.Base).Round(time.Second), hb(r.GrowthBytes))
		if len(r.Growth) == 0 {
			pf("  no site grew\n")
		}
		for _, s := range r.Growth {
			pf("  %10s  %s\n", "+"+hb(s.GrowthBytes), s.Title(4))
		}
	}
	if r.ProfileFile != "" {
		pf("\npprof profile: %s (go tool pprof -top %s)\n", r.ProfileFile, r.ProfileFile)
	}
	return nil
}
