package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/live"
	"github.com/spf13/cobra"
)

func newCheckCmd() *cobra.Command {
	var (
		host          hostFlags
		asJSON        bool
		runtimeRoot   string
		top           int
		failOn        string
		mallocN       int
		mallocTimeout time.Duration
		rt            runtimeFlags
		focus         focusFlags
		culprits      culpritFlags
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Diagnose this host now: where the memory is, what is wrong, what to do",
		Long: `check reads the host's memory state once (meminfo, vmstat, zoneinfo, slabinfo,
cgroups, PSI, sysctls and the largest processes), explains where the memory
is, recomputes the kernel's watermarks, and runs every rule.

Without root it still works and says what it could not read. Reading is
cheap: status/statm for every process, smaps_rollup only for the few that can
be in the top N by PSS.`,
		Example: `  memdoctor check
  memdoctor check --top 20
  memdoctor check --json | jq '.findings[] | {id, severity, summary}'
  memdoctor check --capture host.txtar
  memdoctor check --fail-on warning   # exit 2 when a warning or worse is found
  memdoctor check --user postgres --sort uss   # one user's processes, by what exiting would free
  memdoctor check --users --top 0              # per-user totals (smem -u), no process table
  memdoctor check --pid 4242,4243 --json
  memdoctor check --cgroup /system.slice/nginx.service --sort swap
  memdoctor check --cgroup nginx.service --top 0   # one cgroup: limits, charge, events, pressure, its findings
  memdoctor check --scan-pages       # root: how much page cache pins the dying cgroups
  memdoctor check --trace 30s        # root: who creates and removes memory cgroups, at what rate
  memdoctor check --malloc 3          # also read malloc_info of the 3 largest glibc processes (pauses each for ms)
  memdoctor check --scrape http://127.0.0.1:8080/metrics --json   # a service's GC too`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			shortRunGC()
			threshold, err := live.ParseFailOn(failOn)
			if err != nil {
				return err
			}
			if err := checkTop(top); err != nil {
				return err
			}
			if err := rt.Validate(); err != nil {
				return err
			}
			if err := focus.Parse(top); err != nil {
				return err
			}
			h, err := host.open()
			if err != nil {
				return err
			}
			// SIGINT or SIGTERM ends the GC interval, the trace or the
			// allocators' reading early (the .NET sessions are stopped,
			// the report made from what was read); a second signal kills
			// as usual. Before those, a signal ends check at once.
			ctx, interruptible, stop := interruptibleContext(cmd.Context())
			defer stop()
			rep, err := live.Check(ctx, h, live.CheckOptions{Top: top, Runtimes: &rt.Runtimes, Focus: &focus.Focus,
				MallocN: mallocN, MallocTimeout: mallocTimeout, Log: cmd.ErrOrStderr(), Bars: progressBars(cmd), Culprits: &culprits.Culprits,
				RuntimeRoot: runtimeRoot, Interruptible: interruptible})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = text.JSON(out, rep)
			} else {
				err = text.Text(out, rep, text.Options{Color: colorOK(out), Top: top, Sort: focus.Sort})
			}
			if err != nil {
				return err
			}
			if live.Fails(rep.Findings, threshold) {
				return exitError{2}
			}
			return nil
		},
	}
	host.register(cmd)
	rt.register(cmd)
	focus.register(cmd)
	culprits.register(cmd)
	cmd.Flags().StringVar(&runtimeRoot, "runtime-root", "", "read the container runtimes' and the kubelet's state (pod and container names) below `DIR` instead of the host's root")
	_ = cmd.Flags().MarkHidden("runtime-root")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (a stable interface)")
	cmd.Flags().IntVar(&top, "top", 10, "how many processes, cgroups and slab caches to show")
	cmd.Flags().StringVar(&failOn, "fail-on", "none", "exit with status 2 when a finding of this `severity` or worse is found (info, warning, critical)")
	cmd.Flags().IntVar(&mallocN, "malloc", 0, "read the allocator state (called inside the process: glibc's malloc_info, jemalloc's mallctl, tcmalloc's MallocExtension) of the `N` largest glibc processes not running memdoctor's preload library, and of the N largest whose malloc jemalloc or tcmalloc serves; one thread of each is held for about a millisecond (processes under seccomp are skipped, with a note)")
	cmd.Flags().DurationVar(&mallocTimeout, "malloc-timeout", 10*time.Second, "give up on one process' malloc_info after this long (it is never left stopped)")
	return cmd
}

// interruptibleContext returns a context of parent, the function that
// makes SIGINT and SIGTERM cancel it from then on (once; the first signal
// after that cancels, and a second kills as usual), and the one that
// cancels it and lets the handler go. The handler is installed only when
// asked for: the runtime gives signals a thread of their own and a
// goroutine waiting on them, a third of a millisecond of CPU and 23
// context switches for a static Go program that prints a line (1.77
// against 1.45 ms).
func interruptibleContext(parent context.Context) (context.Context, func(), context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	var once sync.Once
	arm := func() {
		once.Do(func() {
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			go func() {
				select {
				case <-sig:
				case <-ctx.Done():
				}
				signal.Stop(sig)
				cancel()
			}()
		})
	}
	return ctx, arm, cancel
}

// colorOK says whether w is a terminal that wants colour.
func colorOK(w any) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// shortRunGC lets a short run's heap grow to 16 MiB before its first
// collection (GOGC=400 on the runtime's 4 MiB minimum) and collects at
// 100 % from then on. check's heap is nearly all garbage (under 1 MB live
// of 10 MB allocated on a host of 80 processes): a collection at every
// 4 MB was 3 or 4 of them, a tenth of its CPU, and now none, for 0.7 MiB
// more peak RSS; on a host where more is live, the peak is today's or
// 16 MiB, never four times what is live. An explicit GOGC wins.
func shortRunGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(400)
	// The first cycle finds this object unreachable and queues its
	// cleanup, which puts the default back.
	runtime.AddCleanup(new([64]byte), func(struct{}) { debug.SetGCPercent(100) }, struct{}{})
}
