//go:build linux

package safeio

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// TestBeneathFollowsNoLink: below a root, a regular file is opened and a
// directory listed (links inside it listed as links); a link anywhere on
// the way, pointing out of the root or inside it, is refused, as are "..",
// absolute names, a FIFO (without blocking) and a listing over its cap.
func TestBeneathFollowsNoLink(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	root := filepath.Join(top, "root")
	makeTree(t, top,
		[2]string{"root/a/b/f", "file:inside"},
		[2]string{"secret", "file:outside"},
		[2]string{"root/a/out", "link:@secret"},
		[2]string{"root/a/in", "link:b"},
		[2]string{"root/up", "link:@"},
		[2]string{"root/a/fifo", "fifo"})

	f, _, err := OpenBeneath(root, "a/b/f")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	_ = f.Close()
	if string(b) != "inside" {
		t.Errorf("read %q", b)
	}
	start := time.Now()
	for _, name := range []string{"a/out", "a/in/f", "up/secret", "../secret", "/a/b/f", "a/../a/b/f", "a/fifo", "a/b"} {
		if f, _, err := OpenBeneath(root, name); err == nil {
			_ = f.Close()
			t.Errorf("OpenBeneath(%s) opened it", name)
		}
	}
	if time.Since(start) > time.Second {
		t.Errorf("refusing took %v", time.Since(start))
	}
	if _, _, err := ListBeneath(root, "up", 10); err == nil {
		t.Errorf("listed a directory through a link")
	}
	ents, id, err := ListBeneath(root, "a", 10)
	if err != nil || id.Ino == 0 {
		t.Fatalf("ListBeneath(a): %v %+v", err, id)
	}
	types := map[string]uint8{}
	for _, e := range ents {
		types[e.Name] = e.Type
	}
	if types["b"] != TypeDir || types["out"] != TypeSymlink || types["in"] != TypeSymlink || len(ents) != 4 {
		t.Errorf("ListBeneath(a) = %+v", ents)
	}
	if _, _, err := ListBeneath(root, "a", 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ListBeneath over its cap: %v", err)
	}
	if sid, err := StatBeneath(root, "a"); err != nil || sid != id {
		t.Errorf("StatBeneath(a) = %+v %v, want %+v", sid, err, id)
	}
}
