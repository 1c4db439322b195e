package internal_test

// Every command's human output is written in one tree, internal/render
// (render/text for terminals, render/html for pages): the data packages
// return types and never format them for people, so a command's words and
// layout are found, and changed, in one place. A shipped function or method
// outside internal/render named ...Text that takes an io.Writer fails here:
// move it to render/text as a function over the type it prints.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// textElsewhere: writers named ...Text allowed outside internal/render,
// each with why it is not human output for a command.
var textElsewhere = map[string]string{
	"internal/sample.WriteText": "the Prometheus text exposition format, read by machines",
	"internal/leaktrace.Text":   "the cost estimate leaks --ebpf writes on stderr before it attaches, from inside the use case",
}

func TestHumanTextInRenderTree(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || rel == "internal/render" ||
				strings.HasSuffix(d.Name(), "test") || rel == "lab" || rel == "bench" || rel == "scripts" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() || !strings.HasSuffix(fn.Name.Name, "Text") || !takesWriter(fn) {
				continue
			}
			key := filepath.ToSlash(filepath.Dir(rel)) + "." + fn.Name.Name
			if _, ok := textElsewhere[key]; ok {
				seen[key] = true
				continue
			}
			t.Errorf("%s: %s writes text for people outside internal/render: move it to internal/render/text as a function over the type it prints", rel, fn.Name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: the walk missed the tree", files, root)
	}
	for key := range textElsewhere {
		if !seen[key] {
			t.Errorf("textElsewhere lists %s, which no longer exists: remove it", key)
		}
	}
}

// takesWriter: one of fn's parameters is an io.Writer.
func takesWriter(fn *ast.FuncDecl) bool {
	for _, p := range fn.Type.Params.List {
		if sel, ok := p.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Writer" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "io" {
				return true
			}
		}
	}
	return false
}
