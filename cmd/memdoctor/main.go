// Command memdoctor finds where a Linux server's memory went, names the
// mechanism with the numbers that prove it, and says what to do about it.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// exitError carries an exit code without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := bareRoot(stdout, stderr)
	for _, c := range constructors() {
		root.AddCommand(c())
	}
	return root
}

// newRootFor is the command tree run needs for args: when args name a
// subcommand, the root and that one alone, for building every command's
// flags was a tenth of a millisecond of each run (check's start-up); any
// other args (help, completion, a flag first, an unknown name) get the
// whole tree, which cobra needs to list, complete and suggest, as does a
// command annotated needsTree.
func newRootFor(args []string, stdout, stderr io.Writer) *cobra.Command {
	root := bareRoot(stdout, stderr)
	var built []*cobra.Command
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		for _, c := range constructors() {
			cmd := c()
			if cmd.Name() == args[0] && cmd.Annotations[needsTree] == "" {
				root.AddCommand(cmd)
				return root
			}
			built = append(built, cmd)
		}
	} else {
		for _, c := range constructors() {
			built = append(built, c())
		}
	}
	root.AddCommand(built...)
	return root
}

// needsTree is the annotation of a command that reads the whole command
// tree (gendocs writes every command's man page): run builds it all.
const needsTree = "memdoctor.tree"

// constructors lists every subcommand's, the most used first.
func constructors() []func() *cobra.Command {
	return append([]func() *cobra.Command{newCheckCmd, newCaptureCmd, newRecordCmd, newDiagnoseCmd, newExportCmd, newMallocCmd, newTrimCmd, newPreloadCmd, newVersionCmd}, commands...)
}

// bareRoot is the root command without its subcommands.
func bareRoot(stdout, stderr io.Writer) *cobra.Command {
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
		Version:       buildInfo().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root
}

// commands holds the subcommands that register themselves from their own
// file (func init() { commands = append(commands, newXCmd) }).
var commands []func() *cobra.Command

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	root := newRootFor(args, stdout, stderr)
	root.SetArgs(args)
	err := flagValues(root, args)
	if err == nil {
		err = root.Execute()
	}
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		text.Error(stderr, err)
		return 1
	}
	return 0
}

// flagValues rejects a flag that takes a value followed by another flag
// (`--pid --url X`): the parser would take "--url" as the value and fail
// far from the mistake, or worse, succeed. A value that starts with a dash
// and a letter is taken for a flag; negative numbers and durations ("-2h")
// and "-" (standard output) are values. --name=VALUE passes anything.
func flagValues(root *cobra.Command, args []string) error {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return nil // cobra reports unknown commands itself
	}
	lookup := func(a string) *pflag.Flag {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			if f := cmd.Flags().Lookup(name); f != nil {
				return f
			}
			return cmd.InheritedFlags().Lookup(name)
		}
		if len(a) == 2 && a[0] == '-' {
			if f := cmd.Flags().ShorthandLookup(a[1:]); f != nil {
				return f
			}
			return cmd.InheritedFlags().ShorthandLookup(a[1:])
		}
		return nil
	}
	for i := 0; i+1 < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if strings.Contains(a, "=") || !strings.HasPrefix(a, "-") {
			continue
		}
		f := lookup(a)
		if f == nil || f.NoOptDefVal != "" {
			continue // unknown (cobra says so) or needs no value
		}
		next := args[i+1]
		if looksLikeFlag(next) {
			return fmt.Errorf("%s needs a value, but is followed by the flag %s (give %s a value, or write %s=VALUE for a value that starts with a dash)", a, next, a, a)
		}
		i++ // skip the value
	}
	return nil
}

func looksLikeFlag(s string) bool {
	if strings.HasPrefix(s, "--") {
		return len(s) > 2
	}
	return len(s) >= 2 && s[0] == '-' && (s[1] >= 'a' && s[1] <= 'z' || s[1] >= 'A' && s[1] <= 'Z')
}
