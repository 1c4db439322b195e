//go:build linux

package safeio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTargetFiles: OpenFile opens a regular file (through a link, as
// map_files entries are) and refuses a FIFO at once, a device, a file
// over its cap; OpenInRoot resolves a path inside a root as if it were
// "/", refusing any symbolic link on the way, absolute or relative, and
// "..", which stays in the root.
func TestTargetFiles(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	root := filepath.Join(top, "root")
	makeTree(t, top,
		[2]string{"root/tmp/d/f", "file:inside"},
		[2]string{"secret", "file:outside"},
		[2]string{"root/tmp/d/abs", "link:@secret"},
		[2]string{"root/tmp/d/rel", "link:f"},
		[2]string{"root/tmp/dirlink", "link:d"},
		[2]string{"root/tmp/d/fifo", "fifo"},
		[2]string{"f", "file:top"},
		[2]string{"zero", "chardev"})

	start := time.Now()
	f, info, err := OpenFile(filepath.Join(root, "tmp/d/rel"), 100)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	_ = f.Close()
	if string(b) != "inside" || info.Size != 6 || info.UID != uint32(os.Geteuid()) {
		t.Errorf("OpenFile through a link: %q %+v", b, info)
	}
	for _, p := range []string{filepath.Join(root, "tmp/d/fifo"), filepath.Join(top, "zero"), root} {
		if f, _, err := OpenFile(p, 100); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenFile(%s): %v", p, err)
			if f != nil {
				_ = f.Close()
			}
		}
	}
	if _, _, err := OpenFile(filepath.Join(root, "tmp/d/f"), 5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("OpenFile over its cap: %v", err)
	}

	f, _, err = OpenInRoot(root, "/tmp/d/f", 100)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(f)
	_ = f.Close()
	if string(b) != "inside" {
		t.Errorf("OpenInRoot read %q", b)
	}
	if f, _, err := OpenInRoot(root, "/../../f", 100); err == nil {
		b, _ := io.ReadAll(f)
		_ = f.Close()
		t.Errorf(".. left the root: read %q", b)
	}
	for _, name := range []string{"tmp/d/abs", "tmp/d/rel", "tmp/dirlink/f", "tmp/d/fifo", "/dev/zero", "tmp/d"} {
		if f, _, err := OpenInRoot(root, name, 100); err == nil {
			_ = f.Close()
			t.Errorf("OpenInRoot(%s) opened it", name)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v", took)
	}
	// /proc/self/root is a magic link: resolved in it, the root's own
	// links are still refused.
	if f, _, err := OpenInRoot("/proc/self/root", filepath.Join(root, "tmp/d/abs"), 100); err == nil {
		_ = f.Close()
		t.Errorf("a link below /proc/self/root was followed")
	}
}
