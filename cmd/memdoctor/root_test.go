package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// run builds only the subcommand its arguments name: what each command
// prints for --help, a wrong flag or a missing value, and what the root
// prints for help, a flag or an unknown name, must be what the whole tree
// prints.
func TestRootForOneCommandAsWhole(t *testing.T) {
	// printed runs args through the tree build makes, as run does.
	printed := func(build func(args []string, stdout, stderr io.Writer) *cobra.Command, args ...string) (string, string, int) {
		var o, e bytes.Buffer
		root := build(args, &o, &e)
		root.SetArgs(args)
		err := flagValues(root, args)
		if err == nil {
			err = root.Execute()
		}
		code := 0
		if err != nil {
			code = 1
			e.WriteString(err.Error())
		}
		return o.String(), e.String(), code
	}
	whole := func(args ...string) (string, string, int) {
		return printed(func(_ []string, stdout, stderr io.Writer) *cobra.Command { return newRoot(stdout, stderr) }, args...)
	}
	lazy := func(args ...string) (string, string, int) { return printed(newRootFor, args...) }
	cases := [][]string{{}, {"--help"}, {"help"}, {"--version"}, {"chekc"}, {"help", "check"}, {"completion", "bash"}}
	names := 0
	for _, c := range newRoot(nil, nil).Commands() {
		names++
		cases = append(cases, []string{c.Name(), "--help"}, []string{c.Name(), "--no-such-flag"})
	}
	if names < 10 {
		t.Fatalf("the tree has %d commands: the test lists them wrong", names)
	}
	for _, args := range cases {
		wo, we, wc := whole(args...)
		lo, le, lc := lazy(args...)
		if wo != lo || we != le || wc != lc {
			t.Errorf("memdoctor %q: the tree built for it prints\n%s%s(%d)\nthe whole tree\n%s%s(%d)", args, lo, le, lc, wo, we, wc)
		}
	}
	if r := newRootFor([]string{"check", "--json"}, nil, nil); len(r.Commands()) != 1 || r.Commands()[0].Name() != "check" {
		t.Errorf("memdoctor check built %d commands, want check alone", len(r.Commands()))
	}
	// A command that reads the tree (gendocs, built with -tags gendocs:
	// `go test -tags gendocs` runs this too) gets all of it.
	all := newRoot(nil, nil).Commands()
	for _, c := range all {
		got := newRootFor([]string{c.Name()}, nil, nil).Commands()
		if c.Annotations[needsTree] != "" && len(got) != len(all) {
			t.Errorf("memdoctor %s reads the command tree, and got %d of its %d commands", c.Name(), len(got), len(all))
		}
	}
}
