package source

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// A snapshot's FS behaves as an fs.FS must (files, implied directories,
// listings in pieces), and a missing path fails with "open", whatever the
// operation, as the collectors' notes expect.
func TestSnapFS(t *testing.T) {
	t.Parallel()
	m := snapFS{
		"proc/meminfo":              []byte("MemTotal: 1 kB\n"),
		"proc/sys/kernel/osrelease": []byte("5.0.0\n"),
		"proc/slabinfo":             []byte("slabinfo - version: 2.1\n"),
	}
	if err := fstest.TestFS(m, "proc/meminfo", "proc/sys/kernel/osrelease", "proc/slabinfo"); err != nil {
		t.Fatal(err)
	}
	ents, err := fs.ReadDir(m, "proc")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "meminfo slabinfo sys"; got != want {
		t.Errorf("proc lists %q, want %q", got, want)
	}
	for name, op := range map[string]func(string) error{
		"read": func(p string) error { _, err := fs.ReadFile(m, p); return err },
		"list": func(p string) error { _, err := fs.ReadDir(m, p); return err },
		"stat": func(p string) error { _, err := fs.Stat(m, p); return err },
	} {
		err := op("proc/vmstat")
		if !errors.Is(err, fs.ErrNotExist) || err.Error() != "open proc/vmstat: file does not exist" {
			t.Errorf("%s of a missing file: %v, want open proc/vmstat: file does not exist", name, err)
		}
	}
}
