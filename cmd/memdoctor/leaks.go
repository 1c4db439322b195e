package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/leaks"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newLeaksCmd) }

// leaksGrace is how long leaks may take to end after SIGINT or SIGTERM
// (with --ebpf the signal ends the trace, and the report of what was
// sampled is still written) before it exits without finishing; a second
// signal exits at once. The kernel removes any probe still attached when
// memdoctor exits.
const leaksGrace = 5 * time.Second

// leaksWatchdog exits the process leaksGrace after a signal ended ctx, or
// at a second signal, unless leaks returned (done) by then: whatever a
// hostile target made it wait on, a signal ends it.
func leaksWatchdog(ctx context.Context, done <-chan struct{}, stderr io.Writer) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	select {
	case <-done:
		return
	case <-again:
		_, _ = fmt.Fprintln(stderr, "memdoctor leaks: a second signal: exiting now (the kernel removes the probes)")
	case <-time.After(leaksGrace):
		_, _ = fmt.Fprintf(stderr, "memdoctor leaks: still busy %s after the signal: exiting now (the kernel removes the probes)\n", leaksGrace)
	}
	os.Exit(1)
}

func newLeaksCmd() *cobra.Command {
	var (
		asJSON   bool
		output   string
		interval time.Duration
		top      int
		timeout  time.Duration
		useEBPF  bool
		duration time.Duration
		rate     string
		maxSamp  uint64
	)
	cmd := &cobra.Command{
		Use:   "leaks PID",
		Short: "Show which code holds a process' heap: sampled allocation sites by bytes in use and by growth",
		Long: `leaks reads the heap profile that memdoctor's preload library writes for a
process started with it and MEMDOCTOR_PROFILE=RATE: about one allocation per
RATE bytes allocated is sampled with its call stack, and its free matched,
so the profile tells the bytes each call stack still holds (estimates
scaled from the samples; at 512KiB within a few percent for sites holding
tens of MiB). The stacks are named from the process' own ELF symbol tables,
with source lines (file:line of each call) where a file, or its debug file
under /usr/lib/debug (by build ID or .gnu_debuglink), has DWARF line info.

  LD_PRELOAD=$(memdoctor preload --print-path) MEMDOCTOR_PROFILE=512KiB \
    MEMDOCTOR_PROFILE_PATH=/var/tmp/heap.%p ./server

The library rewrites the profile every MEMDOCTOR_PROFILE_INTERVAL (10s) and
at exit. With --interval, leaks reads the profile, waits for one written at
least that much later, and ranks the sites by their growth in between: a
leak grows, a cache that is full does not. --output writes the profile in
pprof's format (go tool pprof, speedscope and Pyroscope read it).

Without a restart: --ebpf samples a process that was not started under the
library, for --duration (at most 10m; as root, on a kernel with BPF and
uprobes). Uprobes on the process' own libc malloc, calloc, realloc,
memalign, posix_memalign, aligned_alloc and free sample one allocation per
--rate bytes in the kernel, with its user stack, and forget a sampled block
when it is freed; the report and the profile are the ones above, counting
only what was allocated during the trace (so its in-use bytes are its
growth). Before sampling, leaks times a probe hit, counts the process'
allocation calls for a second, and prints the estimated cost and the caps.
Every probe is removed at the end, on Ctrl-C, when the process exits, and
by the kernel if memdoctor dies. Each allocation call pays two probe hits
(microseconds): fine for a server allocating thousands of times a second,
not for one allocating millions; there, use the preload library.`,
		Example: `  memdoctor leaks 4242
  memdoctor leaks 4242 --interval 5m                  # what grew in 5 minutes
  memdoctor leaks 4242 --output heap.pb.gz && go tool pprof -top heap.pb.gz
  go tool pprof -top -lines heap.pb.gz                # by source line (DWARF)
  memdoctor leaks 4242 --json | jq '.sites[0]'
  memdoctor leaks 4242 --ebpf --duration 30s -o heap.pb.gz  # no restart: uprobes for 30 s`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := mallocPID(args[0])
			if err != nil {
				return err
			}
			if interval < 0 || top <= 0 || timeout <= 0 || duration <= 0 {
				return fmt.Errorf("--interval, --top and --timeout: want positive values")
			}
			ctx, stop := mallocContext()
			defer stop()
			done := make(chan struct{})
			defer close(done) // before stop: the watchdog sees the return first
			go leaksWatchdog(ctx, done, cmd.ErrOrStderr())
			rep, path, err := leaks.Leaks(ctx, pid, leaks.Options{Interval: interval, Top: top, Timeout: timeout, Output: output,
				EBPF: useEBPF, Duration: duration, Rate: rate, MaxSamples: maxSamp, EstimateOut: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return text.LeaksText(cmd.OutOrStdout(), path, rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (a stable interface)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "also write the profile to this file in pprof's format (gzipped protobuf, .pb.gz)")
	cmd.Flags().DurationVar(&interval, "interval", 0, "rank the sites by their growth over this time (waits for a profile written that much later)")
	cmd.Flags().IntVar(&top, "top", 10, "sites to show")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "bound on reading a profile, and on waiting past --interval for the next one")
	cmd.Flags().BoolVar(&useEBPF, "ebpf", false, "sample a process not started under the preload library with uprobes (root; time-boxed by --duration)")
	cmd.Flags().DurationVar(&duration, "duration", 30*time.Second, "with --ebpf: how long the probes stay attached (at most 10m)")
	cmd.Flags().StringVar(&rate, "rate", "512KiB", "with --ebpf: mean bytes allocated between samples")
	cmd.Flags().Uint64Var(&maxSamp, "max-samples", 0, "with --ebpf: end the trace after this many sampled allocations (0: 1000000)")
	return cmd
}
