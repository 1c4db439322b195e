package main

import (
	"fmt"
	"os"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/spf13/cobra"
)

// hostFlags select what a read command reads: the live host (default), a
// directory laid out like / (--root), or a capture archive (--capture).
type hostFlags struct {
	root    string
	capture string
}

func (f *hostFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.root, "root", "", "read /proc and /sys below `DIR` instead of the live host (an unpacked capture)")
	cmd.Flags().StringVar(&f.capture, "capture", "", "read a capture archive `FILE` made by 'memdoctor capture'")
	cmd.MarkFlagsMutuallyExclusive("root", "capture")
}

// hostSource is what a read command reads.
type hostSource struct {
	fs   procfs.FS
	name string
	// taken is when the data was read (zero for the live host: now).
	taken time.Time
}

// now returns the sample time to use: the capture's time when replaying.
func (s hostSource) now() func() time.Time {
	if s.taken.IsZero() {
		return time.Now
	}
	return func() time.Time { return s.taken }
}

// open returns the FS to read and a name for the source.
func (f *hostFlags) open() (hostSource, error) {
	switch {
	case f.capture != "":
		fsys, prov, err := capture.LoadFile(f.capture)
		if err != nil {
			return hostSource{}, fmt.Errorf("reading capture: %w", err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		return hostSource{pfs, "capture " + f.capture, prov.Time}, nil
	case f.root != "":
		if st, err := os.Stat(f.root); err == nil && !st.IsDir() {
			return hostSource{}, fmt.Errorf("--root %s is a file; for an archive use --capture", f.root)
		}
		fsys, prov, err := capture.OpenDir(f.root)
		if err != nil {
			return hostSource{}, fmt.Errorf("--root: %w", err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		return hostSource{pfs, "root " + f.root, prov.Time}, nil
	}
	return hostSource{fs: procfs.NewFS("/"), name: "live"}, nil
}

func (f *hostFlags) live() bool { return f.root == "" && f.capture == "" }
