package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/spf13/cobra"
)

// buildFleetPage scans a fleet through the Prometheus HTTP API exactly as
// diagnose --prometheus does, then reads the charted series of the
// instances with findings (the --top worst) at display resolution. The
// page's findings are the scan's; the charts never feed them.
func buildFleetPage(cmd *cobra.Command, f *fleetFlags, until string) (*history.PageReport, error) {
	fl, err := f.fleet(until)
	if err != nil {
		return nil, err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(fleetMemoryLimit)
	}
	defer stoppable(cmd)()
	bar := newProgress(cmd.ErrOrStderr(), "scanning "+fl.Client.URL())
	ctx, endSession := f.prom.session(cmd, fl.Client, bar, "scanning the fleet")
	defer endSession(nil) //nolint:errcheck // ends the session; errors are ended explicitly
	res, err := fl.Scan(ctx, bar.update)
	bar.done()
	if err != nil {
		return nil, endSession(err)
	}
	resumedNote(cmd, f, res.Resumed, res.Suspects)
	printWarnings(cmd.ErrOrStderr(), res.Warnings)
	rp, err := fl.FleetPage(ctx, res, f.top, func() { bar = newProgress(cmd.ErrOrStderr(), "reading the charted series") })
	err = endSession(err)
	bar.done()
	if err != nil {
		return nil, fmt.Errorf("reading the charted series: %w", err)
	}
	return rp, nil
}
