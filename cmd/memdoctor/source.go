package main

import (
	"github.com/memdoctor/memdoctor/internal/usecase/live"
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

// open opens what to read.
func (f *hostFlags) open() (*live.Host, error) {
	return live.OpenHost(f.root, f.capture)
}
