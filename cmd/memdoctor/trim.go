package main

import (
	"fmt"
	"io"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/malloc"
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
			stderr, out := cmd.ErrOrStderr(), cmd.OutOrStdout()
			opt, err := f.options(stderr)
			if err != nil {
				return err
			}
			if apply && noPause {
				return fmt.Errorf("--no-pause is for the dry run: --apply holds one thread of the process for the trim (a process running the preload library is never held)")
			}
			ctx, stop := mallocContext()
			defer stop()
			paused := malloc.WillPause(pid, opt)
			if !apply {
				if paused && !noPause {
					mallocWarn(stderr, "memdoctor: holding one thread of pid %d briefly to read malloc_info for the estimate (--no-pause to read /proc only)\n", pid)
				}
				est, err := malloc.Estimate(ctx, pid, opt, noPause)
				if est != nil && est.Report != nil && est.Report.Pause != nil {
					mallocWarn(stderr, "memdoctor: %s\n", pauseLine(pid, est.Report.Pause))
				}
				if err != nil {
					return err
				}
				if f.asJSON {
					return mallocJSON(out, est)
				}
				return estimateText(out, est)
			}
			if paused {
				mallocWarn(stderr, "memdoctor: holding one thread of pid %d to call malloc_trim(0) in it\n", pid)
			}
			res, err := malloc.Trim(ctx, pid, opt)
			if res != nil && res.Pause != nil {
				mallocWarn(stderr, "memdoctor: %s\n", pauseLine(pid, res.Pause))
			}
			if err != nil {
				return err
			}
			if f.asJSON {
				return mallocJSON(out, res)
			}
			return trimText(out, res)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&apply, "apply", false, "call malloc_trim(0) in the process (without it nothing is changed)")
	cmd.Flags().BoolVar(&noPause, "no-pause", false, "dry run from /proc only: an upper bound; the process is neither paused nor asked (no request to its preload library)")
	return cmd
}

func mallocJSON(w io.Writer, v any) error { return writeJSON(w, v) }

func estimateText(w io.Writer, e *malloc.TrimEstimate) error {
	hb := diagnose.HumanBytes
	p := &mallocWriter{w: w}
	p.f("dry run, nothing changed: pid %d (%s)\n", e.PID, e.Comm)
	switch {
	case e.ExpectedGainBytes != nil:
		how := "called in the process, one thread held briefly"
		if e.Source == "preload" {
			how = "asked the preload library, no pause"
		}
		p.f("expected gain: %s (retained %s, RssAnon %s; malloc_info %s)\n",
			hb(*e.ExpectedGainBytes), hb(*e.RetainedBytes), hb(e.Process.RssAnon), how)
	case e.UpperBoundBytes != nil:
		p.f("gain at most %s: the resident memory of its malloc heaps (RssAnon %s)\n", hb(*e.UpperBoundBytes), hb(e.Process.RssAnon))
		p.f("  without pausing the process its free and used heap memory cannot be told apart; run without --no-pause for the estimate\n")
	}
	if e.Apply == "preload" {
		p.f("\n--apply asks the preload library:\n")
	} else {
		p.f("\n--apply calls malloc_trim(0) inside the process:\n")
	}
	for i, s := range e.Steps {
		p.f("  %d. %s\n", i+1, s)
	}
	for _, n := range e.Notes {
		p.f("note: %s\n", n)
	}
	p.f("\nto trim: memdoctor trim %d --apply\n", e.PID)
	return p.err
}

func trimText(w io.Writer, r *malloc.TrimResult) error {
	hb := diagnose.HumanBytes
	p := &mallocWriter{w: w}
	how := "called in the process"
	if r.Pause != nil {
		how = fmt.Sprintf("called in the process, thread %d held %.1f ms", r.Pause.Thread, r.Pause.AttachedMs)
	}
	if r.Source == "preload" {
		how = "by its preload library, no pause"
	}
	p.f("trimmed pid %d: RSS %s -> %s (%s given back) in %.1f ms, %s\n",
		r.PID, hb(r.RSS.Before), hb(r.RSS.After), hb(r.RSS.Diff), r.ElapsedMs, how)
	if r.PssAnon != nil {
		p.f("  RssAnon %s -> %s, Pss_Anon %s -> %s\n", hb(r.RssAnon.Before), hb(r.RssAnon.After), hb(r.PssAnon.Before), hb(r.PssAnon.After))
	}
	if r.Released != nil && *r.Released == 0 {
		p.f("  malloc_trim returned 0: there was nothing to give back\n")
	}
	for _, n := range r.Notes {
		p.f("note: %s\n", n)
	}
	return p.err
}
