package main

import (
	"fmt"
	"os"

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

// open returns the FS to read and a name for the source.
func (f *hostFlags) open() (procfs.FS, string, error) {
	switch {
	case f.capture != "":
		fsys, prov, err := capture.LoadFile(f.capture)
		if err != nil {
			return procfs.FS{}, "", fmt.Errorf("reading capture: %w", err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		return pfs, "capture " + f.capture, nil
	case f.root != "":
		if st, err := os.Stat(f.root); err == nil && !st.IsDir() {
			return procfs.FS{}, "", fmt.Errorf("--root %s is a file; for an archive use --capture", f.root)
		}
		fsys, prov, err := capture.OpenDir(f.root)
		if err != nil {
			return procfs.FS{}, "", fmt.Errorf("--root: %w", err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		return pfs, "root " + f.root, nil
	}
	return procfs.NewFS("/"), "live", nil
}

func (f *hostFlags) live() bool { return f.root == "" && f.capture == "" }
