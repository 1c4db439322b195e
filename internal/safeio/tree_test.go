//go:build linux

package safeio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// makeTree builds a file tree for a test below top. Each entry is a path
// relative to top and what it is: "dir", "file:CONTENT", "link:TARGET"
// (a TARGET starting with "@" is made absolute, below top), "fifo" or
// "chardev" (a copy of /dev/zero's node: a device that is safe to open).
// Parents are made as needed.
func makeTree(t *testing.T, top string, entries ...[2]string) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(top, e[0])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		kind, arg, _ := strings.Cut(e[1], ":")
		var err error
		switch kind {
		case "dir":
			err = os.MkdirAll(p, 0o755)
		case "file":
			err = os.WriteFile(p, []byte(arg), 0o644)
		case "link":
			if rest, ok := strings.CutPrefix(arg, "@"); ok {
				arg = filepath.Join(top, rest)
			}
			err = os.Symlink(arg, p)
		case "fifo":
			err = syscall.Mkfifo(p, 0o644)
		case "chardev":
			err = syscall.Mknod(p, syscall.S_IFCHR|0o644, int(unix.Mkdev(1, 5)))
		default:
			t.Fatalf("makeTree: %s: unknown kind %q", e[0], e[1])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// EachName lists what os.ReadDir lists, names of every length (each
// getdents64 record carries its own), "." and ".." left out; a missing
// directory is fs.ErrNotExist.
func TestEachName(t *testing.T) {
	dir := t.TempDir()
	want := []string{}
	for i := range 700 { // more than one 8 KiB buffer of records
		name := fmt.Sprintf("%03d-%s", i, strings.Repeat("n", i%200))
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	d := NewDirFS(filepath.Dir(dir), Config)
	var got []string
	if err := d.EachName(filepath.Base(dir), func(n string) { got = append(got, strings.Clone(n)) }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if strings.Join(got, "/") != strings.Join(want, "/") {
		t.Errorf("EachName listed %d names, want %d", len(got), len(want))
	}
	if err := d.EachName("missing-"+filepath.Base(dir), func(string) {}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
	n := 0
	if err := NewDirFS("/", ProcFile).EachName("proc", func(name string) {
		if name == "self" || name == "." || name == ".." {
			n += 1000
		}
		if name == strconv.Itoa(os.Getpid()) {
			n++
		}
	}); err != nil || n != 1001 {
		t.Errorf("proc: this process and self listed, . and .. not (%d), %v", n, err)
	}
}
