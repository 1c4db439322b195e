//go:build linux

package safeio

import (
	"os"
	"path/filepath"
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
