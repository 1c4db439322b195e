// Command memdoctor finds where a Linux server's memory went, names the
// mechanism with the numbers that prove it, and says what to do about it.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries an exit code without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "memdoctor",
		Short: "Find where a Linux server's memory went, and why",
		Long: `memdoctor explains memory on a Linux host: where it is (page cache, anon,
slab, cgroups, processes), which mechanism is wasting it (dying cgroups,
allocator hoarding, tight watermarks, runaway garbage collectors), the numbers
that prove it, and the exact commands to fix it. Nothing is changed without
--apply.`,
		Example: `  memdoctor check                 # diagnose this host now
  memdoctor check --json | jq .findings
  memdoctor capture -o host.txtar # save the evidence, command lines redacted
  memdoctor check --capture host.txtar`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newCheckCmd(), newCaptureCmd(), newRecordCmd(), newDiagnoseCmd(), newExportCmd(), newMallocCmd(), newTrimCmd(), newPreloadCmd())
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

// commands holds the subcommands that register themselves from their own
// file (func init() { commands = append(commands, newXCmd) }).
var commands []func() *cobra.Command

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		_, _ = fmt.Fprintln(stderr, "memdoctor:", err) // nowhere left to report a failed write
		return 1
	}
	return 0
}
