package text

import (
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/heapprof"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// LeaksText prints a leaks report read from path.
func LeaksText(w io.Writer, path string, r *heapprof.Report) error {
	hb := format.Bytes
	pf := func(format string, a ...any) { _, _ = termsafe.Fprintf(w, format, a...) }
	if r.Source == "ebpf" {
		pf("pid %d, %s ended %s: %s allocated in the trace and still in use in sampled sites (one sample per %s allocated, %d samples",
			r.PID, path, r.Time.Format(time.RFC3339), hb(r.InUseBytes), hb(int64(r.Rate)), r.Samples)
	} else {
		pf("pid %d, heap profile %s written %s: %s in use in sampled sites (one sample per %s allocated, %d samples",
			r.PID, path, r.Time.Format(time.RFC3339), hb(r.InUseBytes), hb(int64(r.Rate)), r.Samples)
	}
	if r.Dropped > 0 {
		pf(", %d not followed: the table was full", r.Dropped)
	}
	pf(")\n\nby bytes in use:\n")
	for _, s := range r.Sites {
		pf("  %10s %5.1f%%  %s\n", hb(s.InUseBytes), 100*s.Share, s.Title(4))
	}
	if !r.Base.IsZero() {
		pf("\ngrowth over %s: %s\n", format.Clock(r.Time.Sub(r.Base)), hb(r.GrowthBytes))
		if len(r.Growth) == 0 {
			pf("  no site grew\n")
		}
		for _, s := range r.Growth {
			pf("  %10s  %s\n", "+"+hb(s.GrowthBytes), s.Title(4))
		}
	}
	for _, n := range r.Notes {
		pf("\nnote: %s", n)
	}
	if len(r.Notes) > 0 {
		pf("\n")
	}
	if r.ProfileFile != "" {
		pf("\npprof profile: %s (go tool pprof -top %s)\n", r.ProfileFile, r.ProfileFile)
	}
	return nil
}
