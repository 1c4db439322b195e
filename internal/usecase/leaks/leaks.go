// Package leaks is `memdoctor leaks`: one process' heap profile, from the
// preload library or sampled with uprobes, ranked by site. It is a use
// case of its own so that the live slice does not import the profilers.
package leaks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/heapprof"
	"github.com/memdoctor/memdoctor/internal/leaktrace"
	"github.com/memdoctor/memdoctor/internal/malloc"
	"github.com/memdoctor/memdoctor/internal/outfile"
)

// Options bound `memdoctor leaks`.
type Options struct {
	// Interval > 0 ranks the sites by growth between the current profile
	// and one written Interval later.
	Interval time.Duration
	// Top sites are kept in each list.
	Top int
	// Timeout bounds reading a profile, and waiting past Interval.
	Timeout time.Duration
	// Output, when set, is where the profile is written in pprof's format.
	Output string
	// EBPF samples the process with uprobes for Duration instead of
	// reading the preload library's profile (leaktrace).
	EBPF     bool
	Duration time.Duration
	Rate     string // mean bytes between samples ("" for 512KiB)
	// MaxSamples ends the trace after this many sampled allocations (0: the default).
	MaxSamples uint64
	// EstimateOut gets the overhead estimate before sampling starts.
	EstimateOut io.Writer
}

// Leaks reads the heap profile that the preload library writes for pid and
// ranks its sites; it returns the report and the profile file it read.
func Leaks(ctx context.Context, pid int, o Options) (*heapprof.Report, string, error) {
	if o.EBPF {
		return leaksEBPF(ctx, pid, o)
	}
	first, d, err := readLeakDump(ctx, pid, o.Timeout)
	if err != nil {
		return nil, "", err
	}
	var base *heapprof.Dump
	if o.Interval > 0 {
		base = d
		if first, d, err = waitLeakDump(ctx, pid, base.Time.Add(o.Interval), o.Interval, o.Timeout); err != nil {
			return nil, "", err
		}
	}
	rep, err := leaksReport(ctx, heapprof.NewSymbolizer(first.Open), d, base, o)
	if err != nil {
		return nil, "", err
	}
	return rep, first.Path, nil
}

// leaksEBPF samples the process with uprobes (leaktrace) for o.Duration.
func leaksEBPF(ctx context.Context, pid int, o Options) (*heapprof.Report, string, error) {
	if o.Interval > 0 {
		return nil, "", fmt.Errorf("--interval reads two profiles of the preload library; with --ebpf, the growth is over --duration")
	}
	rate := uint64(leaktrace.DefaultRate)
	if o.Rate != "" {
		r, err := leaktrace.ParseRate(o.Rate)
		if err != nil {
			return nil, "", err
		}
		rate = r
	}
	opt := leaktrace.Options{PID: pid, Rate: rate, Duration: o.Duration, MaxSamples: o.MaxSamples}
	if o.EstimateOut != nil {
		opt.Estimate = func(e leaktrace.Estimate) error {
			e.Text(o.EstimateOut)
			return nil
		}
		opt.Started = func() {
			_, _ = fmt.Fprintf(o.EstimateOut, "sampling pid %d for %s (Ctrl-C ends it early)\n", pid, o.Duration)
		}
	}
	res, err := leaktrace.Run(ctx, opt)
	if err != nil {
		return nil, "", err
	}
	// A signal during the trace ends it early, with its report: the names
	// are read past it (the reads never block and are bounded).
	rep, err := leaksReport(context.WithoutCancel(ctx), heapprof.NewSymbolizer(res.Open), res.Dump, res.Base, o)
	if err != nil {
		return nil, "", err
	}
	rep.Source = "ebpf"
	rep.Notes = append(rep.Notes, "the trace ended: "+res.Ended)
	if res.DroppedStack > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d samples without their stack (the stack map was full or a bucket taken): listed as (unknown)", res.DroppedStack))
	}
	if res.Capped > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d allocations not sampled after the cap of %d samples", res.Capped, res.Estimate.MaxSamples))
	}
	if res.DroppedEvent > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d samples missing from the bytes allocated (the ring buffer was full)", res.DroppedEvent))
	}
	return rep, fmt.Sprintf("eBPF trace of %s", res.Dump.Time.Sub(res.Base.Time).Round(time.Millisecond)), nil
}

// leaksReport ranks the sites of d (with their growth since base) and
// writes the pprof profile.
// A signal (ctx) ends it at any point.
func leaksReport(ctx context.Context, sym *heapprof.Symbolizer, d, base *heapprof.Dump, o Options) (*heapprof.Report, error) {
	sym.SetContext(ctx)
	rep := heapprof.NewReport(sym, d, base)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.Output != "" {
		p := heapprof.Profile(sym, d)
		if err := outfile.Write(o.Output, 0o644, p.Write); err != nil {
			return nil, fmt.Errorf("writing %s: %w", o.Output, err)
		}
		rep.ProfileFile = o.Output
	}
	if len(rep.Sites) > o.Top {
		rep.Sites = rep.Sites[:o.Top]
	}
	if len(rep.Growth) > o.Top {
		rep.Growth = rep.Growth[:o.Top]
	}
	return rep, nil
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
