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
		return procfs.NewFSFrom(fsys, prov.PageSize), "capture " + f.capture, nil
	case f.root != "":
		st, err := os.Stat(f.root)
		if err != nil {
			return procfs.FS{}, "", fmt.Errorf("--root: %w", err)
		}
		if !st.IsDir() {
			return procfs.FS{}, "", fmt.Errorf("--root %s is not a directory (for an archive use --capture)", f.root)
		}
		prov, err := capture.ReadProvenanceDir(f.root)
		if err != nil {
			return procfs.FS{}, "", fmt.Errorf("--root: %w", err)
		}
		return procfs.NewFSFrom(os.DirFS(f.root), prov.PageSize), "root " + f.root, nil
	}
	return procfs.NewFS("/"), "live", nil
}

func (f *hostFlags) live() bool { return f.root == "" && f.capture == "" }
