package internal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneCollectionProfile: what a collection reads is decided in one
// place, collect.Profile. Outside internal/collect, no production file
// builds a collect.Options literal; it takes the profile of its kind and
// sets only what is its own (tests may build any options they need).
func TestOneCollectionProfile(t *testing.T) {
	t.Parallel()
	n := 0
	for _, root := range []string{".", filepath.Join("..", "cmd")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || filepath.ToSlash(path) == "collect") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			n++
			ast.Inspect(f, func(x ast.Node) bool {
				lit, ok := x.(*ast.CompositeLit)
				if !ok {
					return true
				}
				if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Options" {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "collect" {
						t.Errorf("%s builds a collect.Options by hand: start from collect.Profile(kind, top, live) and set only what is the caller's own", path)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 100 {
		t.Fatalf("read %d Go files, want the module's", n)
	}
}
