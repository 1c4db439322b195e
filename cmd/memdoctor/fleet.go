package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/prometheus"
	"github.com/spf13/cobra"
)

// fleetFlags are diagnose's options for a Prometheus fleet scan.
type fleetFlags struct {
	prom   promFlags
	by     []string
	all    bool
	top    int
	resume string
}

func (f *fleetFlags) register(cmd *cobra.Command) {
	f.prom.deadline = fleetDeadline
	f.prom.fleet = true
	f.prom.register(cmd, true)
	cmd.Flags().StringSliceVar(&f.by, "by", nil, "with --prometheus: also correlate findings with these `LABELS` (rack, dc, ...)")
	cmd.Flags().BoolVar(&f.all, "all", false, "with --prometheus: fetch and diagnose every instance, not only the pre-filter's suspects (slow)")
	cmd.Flags().IntVar(&f.top, "top", 20, "with --prometheus: show this many instances")
	cmd.Flags().StringVar(&f.resume, "resume", "", "with --prometheus: keep each judged instance in `FILE` as it is judged, and skip those it holds from an earlier run of the same scan (stopped part way)")
}

// stoppable makes SIGINT and SIGTERM end the scan's context (a second
// one ends the process), so that a scan with --resume says what it kept.
func stoppable(cmd *cobra.Command) (stop func()) {
	ctx, stop := signal.NotifyContext(promContext(cmd), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	cmd.SetContext(ctx)
	return stop
}

// resumedNote says on stderr how many instances came from the checkpoint.
func resumedNote(cmd *cobra.Command, f *fleetFlags, resumed, suspects int) {
	if f.resume != "" {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "resumed %d of %d suspects from %s (judged by an earlier run of this scan)\n", resumed, suspects, f.resume)
	}
}

// fleetMemoryLimit is the soft heap limit of a fleet scan.
const fleetMemoryLimit = 128 << 20

// fleetDeadline is --prometheus-deadline's default for a fleet scan
// (diagnose and report --prometheus): 10,000 hosts × 14 days took 5.5
// minutes through Prometheus on 2 CPUs (docs/fleet.md), past the 5 minutes
// that bound the other commands' reads.
const fleetDeadline = 20 * time.Minute

// fleet resolves the flags into a scan: the window (ending at until) and
// its step, the client and the canonical --match.
func (f *fleetFlags) fleet(until string) (*prometheus.Fleet, error) {
	win, err := f.prom.window(until)
	if err != nil {
		return nil, err
	}
	c, err := prometheus.Connect(f.prom.server())
	if err != nil {
		return nil, err
	}
	return &prometheus.Fleet{Client: c, Match: f.prom.match, Window: win, By: f.by, All: f.all, Resume: f.resume}, nil
}

// runFleet is `diagnose --prometheus`.
func runFleet(cmd *cobra.Command, f *fleetFlags, until string, asJSON bool) error {
	fl, err := f.fleet(until)
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// Suspects' windows come and go: collect more often rather than
		// let the heap grow with a large fleet.
		debug.SetMemoryLimit(fleetMemoryLimit)
	}
	defer stoppable(cmd)()
	bar := newProgress(cmd.ErrOrStderr(), "fetching suspects from "+fl.Client.URL())
	ctx, endSession := f.prom.session(cmd, fl.Client, bar, "scanning the fleet")
	res, err := fl.Scan(ctx, bar.update)
	err = endSession(err)
	bar.done()
	if err != nil {
		return err
	}
	resumedNote(cmd, f, res.Resumed, res.Suspects)
	printWarnings(cmd.ErrOrStderr(), res.Warnings)
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), res)
	}
	return text.FleetText(cmd.OutOrStdout(), res, f.top)
}
