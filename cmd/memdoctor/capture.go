package main

import "github.com/spf13/cobra"

func newCaptureCmd() *cobra.Command {
	return &cobra.Command{Use: "capture", Short: "Save every file memdoctor reads into one archive"}
}
