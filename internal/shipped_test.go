package internal_test

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shippedFile is one Go file the module ships: Rel is its slash path from
// the module's root, Path the path to open.
type shippedFile struct{ Rel, Path string }

// shippedGoFiles lists the module's shipped Go files: not tests, not
// testdata, not test support (folders whose names end in "test", see
// TestBinaryHasNoTestCode), not the lab's, bench's or scripts' programs,
// and not under the folders skip names (module-relative, as
// "internal/format"). The tests that hold the whole tree to one rule walk
// it through here; a walk that finds too few files fails, so a broken
// walk cannot pass for a clean tree.
func shippedGoFiles(t *testing.T, skip ...string) []shippedFile {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var out []shippedFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || strings.HasSuffix(d.Name(), "test") ||
				rel == "lab" || rel == "bench" || rel == "scripts" || slices.Contains(skip, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			out = append(out, shippedFile{Rel: rel, Path: path})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found %d shipped Go files under %s: the walk missed the tree", len(out), root)
	}
	return out
}
