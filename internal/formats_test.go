package internal_test

// One set of formats: bytes and durations are written for people by
// internal/format only, so a report, a finding and a log line say the same
// quantity the same way. A float formatted into KiB/MiB/GiB, or a rounded
// duration's String, anywhere else in shipped code fails here: use (or add)
// a function of internal/format.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestOneSetOfFormats(t *testing.T) {
	t.Parallel()
	unitFloat := regexp.MustCompile(`%[-+ #0-9]*\.[0-9]+[fgeFG] ?[KMGTP]iB`)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || rel == "internal/format" ||
				strings.HasSuffix(d.Name(), "test") || rel == "lab" || rel == "bench" || rel == "scripts" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					s = n.Value
				}
				if unitFloat.MatchString(s) {
					t.Errorf("%s: formats bytes itself (%s): use internal/format", fset.Position(n.Pos()), n.Value)
				}
			case *ast.CallExpr:
				// d.Round(...).String(): a duration written by hand.
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "String" || len(n.Args) != 0 {
					return true
				}
				if inner, ok := sel.X.(*ast.CallExpr); ok {
					if r, ok := inner.Fun.(*ast.SelectorExpr); ok && r.Sel.Name == "Round" {
						t.Errorf("%s: formats a duration itself: use internal/format (Clock, Span, Duration)", fset.Position(n.Pos()))
					}
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
