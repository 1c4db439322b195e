package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgtrace"
	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/pagescan"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Culprits are check's opt-in looks at who made and what pins the dying
// cgroups: the cgroup trace (Trace) and the page scan (ScanPages).
type Culprits struct {
	ScanPages   bool
	ScanTimeout time.Duration
	Trace       time.Duration
	TraceMethod string

	traced *cgtrace.Summary
	notes  []sample.Note
}

// before runs the trace (it precedes the reading, so the dying count is
// the one the trace's operations left).
func (f *Culprits) before(ctx context.Context, live bool, progress io.Writer) error {
	if f.ScanPages && !live {
		return errors.New("--scan-pages reads this host's page frames: it cannot be used with --root or --capture")
	}
	if f.Trace <= 0 {
		return nil
	}
	if !live {
		return errors.New("--trace watches this host: it cannot be used with --root or --capture")
	}
	switch f.TraceMethod {
	case "", "bpf", "tracefs":
	default:
		return fmt.Errorf("--trace-method %q: want bpf or tracefs", f.TraceMethod)
	}
	t, err := cgtrace.Start(ctx, cgtrace.Options{Duration: f.Trace, Hierarchy: cgtrace.MemoryHierarchyID(procfs.ProcMount), Method: f.TraceMethod})
	if err != nil {
		f.notes = append(f.notes, sample.Note{Source: "cgroup trace", Message: err.Error(),
			Hides: "who creates and removes the memory cgroups", Fix: "run as root on a kernel with BTF, or mount tracefs"})
		return nil
	}
	// Said once the tracer is attached (loading it took seconds on a
	// loaded host): what is done from then on is traced.
	_, _ = fmt.Fprintf(progress, "memdoctor: tracing memory cgroup creation and removal, and reclaim, for %s\n", f.Trace)
	select {
	case <-ctx.Done():
	case <-time.After(f.Trace):
	}
	t.Stop() // the last drain, then the summary
	s := t.Take()
	t.Close()
	for _, n := range s.Notes {
		f.notes = append(f.notes, sample.Note{Source: "cgroup trace", Message: n})
	}
	if s.Dropped > 0 {
		f.notes = append(f.notes, sample.Note{Source: "cgroup trace", Message: fmt.Sprintf("%d events did not fit the ring buffer", s.Dropped),
			Hides: "part of the cgroup operations (the rates are a lower bound)"})
	}
	f.traced = s
	return nil
}

// after adds the trace's series and runs the page scan (after the reading).
func (f *Culprits) after(ctx context.Context, live bool, s *sample.Snapshot) ([]sample.Note, error) {
	notes := f.notes
	if f.traced != nil {
		f.traced.AddTo(s, true)
	}
	if !f.ScanPages {
		return notes, nil
	}
	if !live {
		return nil, errors.New("--scan-pages reads this host's page frames: it cannot be used with --root or --capture")
	}
	return append(notes, pageScan(ctx, s, f.ScanTimeout)...), nil
}

// pageScan runs the kpagecgroup scan and adds its series to s; what it
// could not do becomes notes, never an error.
func pageScan(ctx context.Context, s *sample.Snapshot, timeout time.Duration) []sample.Note {
	const src = "proc/kpagecgroup"
	h, err := pagescan.FindMemoryHierarchy(procfs.ProcMount)
	if err != nil {
		return []sample.Note{{Source: src, Message: err.Error(), Hides: "what pins the dying cgroups"}}
	}
	res, err := pagescan.Scan(ctx, pagescan.Options{Timeout: timeout})
	if err != nil {
		n := sample.Note{Source: src, Message: err.Error(), Hides: "what pins the dying cgroups"}
		if errors.Is(err, pagescan.ErrNotPermitted) {
			n.Fix = "run as root"
		}
		return []sample.Note{n}
	}
	rep := pagescan.Attribute(res, h, procfs.ProcMount)
	rep.AddTo(s)
	var notes []sample.Note
	if !res.Complete {
		notes = append(notes, sample.Note{Source: src,
			Message: fmt.Sprintf("the page scan stopped at its time limit (%s) after %s of RAM", res.Duration.Round(time.Millisecond), format.Bytes(res.RAMBytes)),
			Hides:   "part of the pages pinning dying cgroups", Fix: "raise --scan-timeout"})
	}
	if !rep.PinnedKnown {
		notes = append(notes, sample.Note{Source: src,
			Message: "on cgroup v2 the kernel counts a removed cgroup's pages to its nearest live ancestor and memory.stat has no local counters: the pages pinning dying cgroups cannot be told from their ancestors' own",
			Hides:   "how much page cache pins the dying cgroups"})
	}
	return notes
}
