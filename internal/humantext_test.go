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
	seen := map[string]bool{}
	files := shippedGoFiles(t, "internal/render")
	for _, sf := range files {
		path, rel := sf.Path, sf.Rel
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
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
