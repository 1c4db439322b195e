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
	"regexp"
	"strconv"
	"testing"
)

func TestOneSetOfFormats(t *testing.T) {
	t.Parallel()
	unitFloat := regexp.MustCompile(`%[-+ #0-9]*\.[0-9]+[fgeFG] ?[KMGTP]iB`)
	files := shippedGoFiles(t, "internal/format")
	for _, sf := range files {
		path := sf.Path
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
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
	}
}
