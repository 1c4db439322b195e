package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/treat"
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

// request is the process and how to reach it; warnings go to stderr.
func (f *mallocFlags) request(pid int, stderr io.Writer) (treat.Request, error) {
	r := treat.Request{PID: pid, Method: f.method, Timeout: f.timeout,
		Warn: func(format string, a ...any) { mallocWarn(stderr, format, a...) }}
	return r, r.Check()
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

Only root may inspect another user's process; PID 1 is refused. A process
under seccomp is called into only when its filters allow every system call
the calls can make (strict mode never); otherwise nothing is called and the
refusal says which filter forbids what.`,
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
			r, err := f.request(pid, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			r.Mallinfo2 = mallinfo2
			ctx, stop := mallocContext()
			defer stop()
			rep, err := treat.Inspect(ctx, r)
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
			return text.MallocText(out, rep)
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
	text.Warnf(w, format, a...)
}
