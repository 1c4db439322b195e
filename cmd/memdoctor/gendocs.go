//go:build gendocs

package main

// The packaging build (`make deb`) builds memdoctor once more with
// -tags gendocs to write the man pages and shell completions from the
// command tree, so they never drift from the commands; the shipped binary
// carries none of this.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() {
	commands = append(commands, newGenDocsCmd)
}

func newGenDocsCmd() *cobra.Command {
	var manDir, complDir string
	cmd := &cobra.Command{
		Use:         "gendocs",
		Short:       "Write the man pages and shell completions (packaging only)",
		Hidden:      true,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{needsTree: "man pages and completions of every command"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			root := cmd.Root()
			root.DisableAutoGenTag = true // no date line: reproducible pages
			if manDir != "" {
				date := time.Now()
				if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
					n, err := strconv.ParseInt(s, 10, 64)
					if err != nil {
						return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
					}
					date = time.Unix(n, 0).UTC()
				}
				if err := os.MkdirAll(manDir, 0o755); err != nil {
					return err
				}
				hdr := &doc.GenManHeader{Section: "1", Date: &date,
					Source: "memdoctor " + buildInfo().Version, Manual: "memdoctor manual"}
				if err := doc.GenManTree(root, hdr, manDir); err != nil {
					return fmt.Errorf("man pages: %w", err)
				}
			}
			if complDir != "" {
				for name, gen := range map[string]func(string) error{
					"memdoctor.bash": func(p string) error { return root.GenBashCompletionFileV2(p, true) },
					"_memdoctor":     root.GenZshCompletionFile,
					"memdoctor.fish": func(p string) error { return root.GenFishCompletionFile(p, true) },
				} {
					if err := os.MkdirAll(complDir, 0o755); err != nil {
						return err
					}
					if err := gen(filepath.Join(complDir, name)); err != nil {
						return fmt.Errorf("completion %s: %w", name, err)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&manDir, "man", "", "write section 1 man pages into `DIR`")
	cmd.Flags().StringVar(&complDir, "completions", "", "write bash, zsh and fish completions into `DIR`")
	return cmd
}
