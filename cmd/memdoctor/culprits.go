package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/pagescan"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/spf13/cobra"
)

// culpritFlags are check's opt-in looks at who made and what pins the dying
// cgroups: the page scan (--scan-pages).
type culpritFlags struct {
	scanPages   bool
	scanTimeout time.Duration
}

func (f *culpritFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.scanPages, "scan-pages", false, "read /proc/kpagecgroup and /proc/kpageflags (root; about 30 ms per GiB of RAM) to tell how much page cache, dirty, mapped or shmem, pins the dying memory cgroups")
	cmd.Flags().DurationVar(&f.scanTimeout, "scan-timeout", 30*time.Second, "stop the page scan after this long (the report says it is partial)")
}

// run does what the flags ask on a live host.
func (f *culpritFlags) run(ctx context.Context, live bool, s *sample.Scrape) ([]sample.Note, error) {
	if !f.scanPages {
		return nil, nil
	}
	if !live {
		return nil, errors.New("--scan-pages reads this host's page frames: it cannot be used with --root or --capture")
	}
	return pageScan(ctx, s, f.scanTimeout), nil
}

// pageScan runs the kpagecgroup scan and adds its series to s; what it
// could not do becomes notes, never an error.
func pageScan(ctx context.Context, s *sample.Scrape, timeout time.Duration) []sample.Note {
	const src = "proc/kpagecgroup"
	h, err := pagescan.FindMemoryHierarchy("/proc")
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
	rep := pagescan.Attribute(res, h, "/proc")
	rep.AddTo(s)
	var notes []sample.Note
	if !res.Complete {
		notes = append(notes, sample.Note{Source: src,
			Message: fmt.Sprintf("the page scan stopped at its time limit after %s of %s of RAM", humanMiB(res.RAMBytes), res.Duration.Round(time.Millisecond)),
			Hides:   "part of the pages pinning dying cgroups", Fix: "raise --scan-timeout"})
	}
	if !rep.PinnedKnown {
		notes = append(notes, sample.Note{Source: src,
			Message: "on cgroup v2 the kernel counts a removed cgroup's pages to its nearest live ancestor and memory.stat has no local counters: the pages pinning dying cgroups cannot be told from their ancestors' own",
			Hides:   "how much page cache pins the dying cgroups"})
	}
	return notes
}

func humanMiB(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }
