package main

import (
	"fmt"
	"io"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/treat"
	"github.com/spf13/cobra"
)

func newTrimCmd() *cobra.Command {
	var (
		f       mallocFlags
		apply   bool
		noPause bool
	)
	cmd := &cobra.Command{
		Use:   "trim PID",
		Short: "Give a process' free malloc memory back to the kernel (malloc_trim); dry run unless --apply",
		Long: `trim calls malloc_trim(0) inside a running process: glibc walks every arena
and returns the whole pages inside its free chunks to the kernel, which is
what calling it from gdb did in incident 5 (RSS fell at once, no leak).

Without --apply nothing is changed: trim shows the expected gain and the steps
--apply takes. The estimate needs malloc_info, which memdoctor calls inside
the process (one thread held for about a millisecond, the others running),
unless the process runs memdoctor's preload library (then it is asked, no
hold). --no-pause reads /proc only and sends nothing to the process, not even
a request to its preload library: without the allocator's state it can give
only an upper bound, the resident memory of the malloc heaps.

With --apply the RSS is measured before and after. One thread is held for the
trim itself plus about a millisecond (malloc_trim takes about 1 s per 30 GB it
gives back); the other threads keep running. No gdb is needed: memdoctor
saves the thread's registers, its whole vector state and its signal mask,
calls malloc_trim(0) from the process' own libc, and restores them exactly.
A process running the preload library trims itself, without a hold. PID 1
and other users' processes (unless root) are refused, and the process is
never left stopped.`,
		Example: `  memdoctor trim 4242                 # expected gain, and what --apply runs
  memdoctor trim 4242 --no-pause      # upper bound from /proc only
  memdoctor trim 4242 --apply
  memdoctor trim 4242 --apply --json  # {"elapsedMs":..,"rss":{"before":..,"after":..,"diff":..},...}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := mallocPID(args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			r, err := f.request(pid, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if apply && noPause {
				return fmt.Errorf("--no-pause is for the dry run: --apply holds one thread of the process for the trim (a process running the preload library is never held)")
			}
			ctx, stop := mallocContext()
			defer stop()
			if !apply {
				est, err := treat.Estimate(ctx, r, noPause)
				if err != nil {
					return err
				}
				if f.asJSON {
					return mallocJSON(out, est)
				}
				return text.EstimateText(out, est)
			}
			res, err := treat.Trim(ctx, r)
			if err != nil {
				return err
			}
			if f.asJSON {
				return mallocJSON(out, res)
			}
			return text.TrimText(out, res)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&apply, "apply", false, "call malloc_trim(0) in the process (without it nothing is changed)")
	cmd.Flags().BoolVar(&noPause, "no-pause", false, "dry run from /proc only: an upper bound; the process is neither paused nor asked (no request to its preload library)")
	return cmd
}

func mallocJSON(w io.Writer, v any) error { return writeJSON(w, v) }
