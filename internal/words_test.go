package internal_test

// One word per idea: a Snapshot (package sample) is every series of one
// instance at one instant, read from /proc, a capture, a store or a
// Prometheus query; a scrape is an HTTP GET of a /metrics page (check
// --scrape, internal/runtimes). A name holding a snapshot that says
// "scrape", or a name in package sample that does, fails here.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestOneWordPerIdea(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || d.Name() == "scripts" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		scrape := func(id *ast.Ident) bool { return strings.Contains(strings.ToLower(id.Name), "scrape") }
		holdsSnapshot := func(e ast.Expr) bool {
			found := false
			ast.Inspect(e, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name == "Snapshot" {
					found = true
				}
				return !found
			})
			return found
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var names []*ast.Ident
			var typ ast.Expr
			switch n := n.(type) {
			case *ast.Field:
				names, typ = n.Names, n.Type
			case *ast.ValueSpec:
				names, typ = n.Names, n.Type
			case *ast.FuncDecl:
				if f.Name.Name == "sample" && scrape(n.Name) {
					t.Errorf("%s: %s: package sample says snapshot, never scrape", fset.Position(n.Pos()), n.Name.Name)
				}
				if n.Type.Results != nil && len(n.Type.Results.List) > 0 && holdsSnapshot(n.Type.Results.List[0].Type) && scrape(n.Name) {
					t.Errorf("%s: %s returns a snapshot: name it so", fset.Position(n.Pos()), n.Name.Name)
				}
			case *ast.TypeSpec:
				if f.Name.Name == "sample" && scrape(n.Name) {
					t.Errorf("%s: %s: package sample says snapshot, never scrape", fset.Position(n.Pos()), n.Name.Name)
				}
			}
			if typ == nil || !holdsSnapshot(typ) {
				return true
			}
			for _, id := range names {
				if scrape(id) {
					t.Errorf("%s: %s holds a snapshot: a scrape is an HTTP GET", fset.Position(id.Pos()), id.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d Go files looked at under %s", files, root)
	}
}
