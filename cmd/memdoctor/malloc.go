package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/malloc"
	"github.com/memdoctor/memdoctor/internal/termsafe"
	"github.com/spf13/cobra"
)

// mallocFlags are shared by malloc and trim.
type mallocFlags struct {
	asJSON  bool
	timeout time.Duration
	method  string
}

func (f *mallocFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print JSON (a stable interface)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 10*time.Second, "bound on the work in the process: no call starts after it, a call waiting on a lock is undone")
	cmd.Flags().StringVar(&f.method, "method", "auto", "how to reach the allocator: auto (the preload library if the process runs it, else ptrace), ptrace (call into the process), or preload (never pauses)")
}

func (f *mallocFlags) options(stderr io.Writer) (malloc.Options, error) {
	m := malloc.Method(f.method)
	switch m {
	case malloc.MethodAuto, malloc.MethodPtrace, malloc.MethodPreload:
	case "gdb":
		mallocWarn(stderr, "memdoctor: --method gdb is now --method ptrace: memdoctor calls into the process itself, gdb is not used\n")
		m = malloc.MethodPtrace
	default:
		return malloc.Options{}, fmt.Errorf("--method %q: want auto, ptrace or preload", f.method)
	}
	if f.timeout <= 0 {
		return malloc.Options{}, fmt.Errorf("--timeout %s: want more than 0", f.timeout)
	}
	return malloc.Options{Timeout: f.timeout, Method: m, OnStuck: func(msg string) { mallocWarn(stderr, "memdoctor: %s\n", msg) }}, nil
}

// mallocPID reads the PID argument.
func mallocPID(s string) (int, error) {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("PID %q: want a process id (a positive number)", s)
	}
	return pid, nil
}

// mallocContext returns a context that Ctrl-C and SIGTERM cancel: the work
// in the process then stops at the next safe point (between calls) instead
// of memdoctor dying in the middle of one.
func mallocContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func newMallocCmd() *cobra.Command {
	var (
		f         mallocFlags
		rawXML    bool
		mallinfo2 bool
	)
	cmd := &cobra.Command{
		Use:   "malloc PID",
		Short: "Show a process' glibc malloc arenas: free memory held, and what malloc_trim would give back",
		Long: `malloc reads glibc malloc's state inside a running process: every arena's
memory from the kernel, its free chunks, the largest one, what is in use,
and "retained": the free memory in whole pages that malloc_trim(0) can hand
back to the kernel.

It calls malloc_info(0) inside the process itself (ptrace; no gdb, no debug
symbols): one thread, blocked in a system call the allocator never makes, is
held for about a millisecond while the other threads keep running (the hold
is measured and printed; the process is never left stopped). Before the
first call memdoctor tries the same on a throwaway child of its own and
refuses to go on if that child does not come out intact. A process running
memdoctor's preload library with MEMDOCTOR_STATS=PATH is asked through the
library instead, without any hold (as root, memdoctor then handles the
request files as the process' user and reads only regular files next to
PATH; --timeout bounds the wait).

Only root may inspect another user's process; PID 1 is refused.`,
		Example: `  memdoctor malloc 4242
  memdoctor malloc 4242 --json | jq '.totals'
  memdoctor malloc 4242 --xml > 4242-malloc_info.xml   # the raw malloc_info document
  memdoctor malloc 4242 --method preload              # never pause the process`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := mallocPID(args[0])
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			opt, err := f.options(stderr)
			if err != nil {
				return err
			}
			opt.Mallinfo2 = mallinfo2
			if malloc.WillPause(pid, opt) {
				mallocWarn(stderr, "memdoctor: holding one thread of pid %d briefly to call malloc_info in it (about a millisecond)\n", pid)
			}
			ctx, stop := mallocContext()
			defer stop()
			rep, err := malloc.Inspect(ctx, pid, opt)
			if rep != nil && rep.Pause != nil {
				mallocWarn(stderr, "memdoctor: %s\n", pauseLine(pid, rep.Pause))
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case rawXML:
				_, err = out.Write(rep.XML)
				return err
			case f.asJSON:
				return writeJSON(out, rep)
			}
			return mallocText(out, rep)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&rawXML, "xml", false, "print the malloc_info XML as the process wrote it")
	cmd.Flags().BoolVar(&mallinfo2, "mallinfo2", false, "also call mallinfo2 (glibc 2.33+) as a cross-check; it walks the same free chunks, so the hold about doubles")
	cmd.MarkFlagsMutuallyExclusive("json", "xml")
	return cmd
}

// mallocWarn writes a line to stderr; a failed write there has nowhere
// left to be reported.
func mallocWarn(w io.Writer, format string, a ...any) {
	_, _ = termsafe.Fprintf(w, format, a...)
}

// pauseLine says how long memdoctor held a thread of the process.
func pauseLine(pid int, p *malloc.Pause) string {
	return fmt.Sprintf("thread %d of pid %d was held %.1f ms (%.1f ms of it in %d calls; %s); its other %d threads ran throughout",
		p.Thread, pid, p.AttachedMs, p.CallsMs, len(p.Calls), p.Why, max(p.Threads-1, 0))
}

func mallocText(w io.Writer, r *malloc.Report) error {
	hb := diagnose.HumanBytes
	dash := func(n int64) string {
		if n <= 0 {
			return "-"
		}
		return hb(n)
	}
	p := &mallocWriter{w: w}
	glibc := r.GlibcVersion
	if glibc == "" {
		glibc = "unknown"
	}
	p.f("pid %d (%s), glibc %s, read through %s\n\n", r.PID, r.Comm, glibc, r.Source)
	tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "arena\tsystem\tfree\tin use\tfree chunks\tlargest free\ttop\tretained\t\n")
	for _, a := range r.Arenas {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", a.Nr, hb(a.SystemBytes), hb(a.FreeBytes), hb(a.InUseBytes),
			a.FreeChunks, dash(a.LargestFreeChunkBytes), dash(a.TopBytes), hb(a.RetainedBytes))
	}
	t := r.Totals
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%d\t\t\t%s\t\n", hb(t.SystemBytes), hb(t.FreeBytes), hb(t.InUseBytes), t.FreeChunks, hb(t.RetainedBytes))
	if err := tw.Flush(); err != nil {
		return err
	}
	p.f("\n%d arenas; %s in %d mmapped chunks outside them\n", t.ArenaCount, hb(t.MmapBytes), t.MmapChunks)
	pct := 0.0
	if t.SystemBytes > 0 {
		pct = 100 * float64(t.RetainedBytes) / float64(t.SystemBytes)
	}
	p.f("retained: %s (%.0f%% of the arenas) is free memory in whole pages that malloc_trim(0) can give back to the kernel\n", hb(t.RetainedBytes), pct)
	p.f("  (pages an earlier trim already gave back still count: compare with RssAnon %s, VmRSS %s)\n", hb(r.Process.RssAnon), hb(r.Process.VMRSS))
	if m := r.Mallinfo2; m != nil {
		p.f("mallinfo2: arena %d, uordblks %d, fordblks %d, hblkhd %d, keepcost %d\n", m.Arena, m.Uordblks, m.Fordblks, m.Hblkhd, m.Keepcost)
	}
	if pp := r.Pause; pp != nil {
		p.f("hold: thread %d held %.1f ms (calls %.1f ms); %d threads in the process\n", pp.Thread, pp.AttachedMs, pp.CallsMs, pp.Threads)
	}
	if r.PreloadMs > 0 {
		p.f("asked the preload library: answered in %.0f ms, no pause\n", r.PreloadMs)
	}
	for _, w := range r.Warnings {
		p.f("warning: %s\n", w)
	}
	for _, n := range r.Notes {
		p.f("note: %s\n", n)
	}
	if t.RetainedBytes >= 64<<20 {
		p.f("\nnext: memdoctor trim %d          # the expected gain and what --apply would run\n", r.PID)
	}
	return p.err
}

// mallocWriter keeps the first write error.
type mallocWriter struct {
	w   io.Writer
	err error
}

func (e *mallocWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

// f writes a line; process names and messages in a are escaped (a
// process chooses its own name).
func (e *mallocWriter) f(format string, a ...any) {
	_, _ = termsafe.Fprintf(e, format, a...) // kept in e.err
}
