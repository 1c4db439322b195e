package safeio

import (
	"io/fs"
	"path/filepath"
	"testing"
)

// A DirFS joins its root and a valid name without cleaning the result:
// the path must be filepath.Join's, whatever the root (relative, with
// dots, slashes doubled or trailing, empty) and the name.
func FuzzJoinAsFilepath(f *testing.F) {
	for _, s := range [][2]string{{"/", "proc/1/status"}, {"", "a"}, {".", "a/b"}, {"/tmp//x/", "y"},
		{"a/../..", "b"}, {"/a/./b/..", "."}, {"..", "c"}, {"/", "."}, {"x", "a/b/c"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, root, name string) {
		d := NewDirFS(root, 1<<20)
		got, err := d.join("open", name)
		if !fs.ValidPath(name) {
			if err == nil {
				t.Fatalf("root %q, invalid name %q: joined as %q", root, name, got)
			}
			return
		}
		if want := filepath.Join(root, filepath.FromSlash(name)); err != nil || got != want {
			t.Fatalf("root %q, name %q: %q (%v), filepath.Join gives %q", root, name, got, err, want)
		}
		// A DirFS not made by NewDirFS joins as well.
		if got, _ := (DirFS{root: root}).join("open", name); got != filepath.Join(root, name) {
			t.Fatalf("root %q, name %q, DirFS{}: %q", root, name, got)
		}
	})
}
