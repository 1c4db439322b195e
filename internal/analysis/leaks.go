package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/heapprof"
	"github.com/memdoctor/memdoctor/internal/malloc"
	"github.com/memdoctor/memdoctor/internal/outfile"
	"github.com/memdoctor/memdoctor/internal/render"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// LeaksOptions bound `memdoctor leaks`.
type LeaksOptions struct {
	// Interval > 0 ranks the sites by growth between the current profile
	// and one written Interval later.
	Interval time.Duration
	// Top sites are kept in each list.
	Top int
	// Timeout bounds reading a profile, and waiting past Interval.
	Timeout time.Duration
	// Output, when set, is where the profile is written in pprof's format.
	Output string
}

// Leaks reads the heap profile that the preload library writes for pid and
// ranks its sites; it returns the report and the profile file it read.
func Leaks(ctx context.Context, pid int, o LeaksOptions) (*heapprof.Report, string, error) {
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
	sym := heapprof.NewSymbolizer(first.Open)
	rep := heapprof.NewReport(sym, d, base)
	if o.Output != "" {
		p := heapprof.Profile(sym, d)
		if err := outfile.Write(o.Output, 0o644, p.Write); err != nil {
			return nil, "", fmt.Errorf("writing %s: %w", o.Output, err)
		}
		rep.ProfileFile = o.Output
	}
	if len(rep.Sites) > o.Top {
		rep.Sites = rep.Sites[:o.Top]
	}
	if len(rep.Growth) > o.Top {
		rep.Growth = rep.Growth[:o.Top]
	}
	return rep, first.Path, nil
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

// LeaksText prints a leaks report read from path.
func LeaksText(w io.Writer, path string, r *heapprof.Report) error {
	hb := render.Bytes
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
		pf("\ngrowth over %s: %s\n", render.Clock(r.Time.Sub(r.Base)), hb(r.GrowthBytes))
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
