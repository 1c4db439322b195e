package diagnose_test

// CONTRIBUTING.md's "Add a rule", step 1: internal/diagnose/<id>.go holds
// one type with Meta() and Eval(*Input), registered from init with
// register(...), under a header that starts with the id and says the
// mechanism. (Step 2 is TestRuleCases; the id only in its own file is
// TestRuleIDsInTheirOwnFiles and TestRuleIDsStayInDiagnose; the documentation
// tables TestRulesDoc; the fleet pre-filter and charts
// TestEveryRuleReachesTheFleet; the goldens are keyed per rule in
// cmd/memdoctor.)

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
)

// recipeFile is what a Go file of the package declares and registers.
type recipeFile struct {
	header     string
	types      map[string]bool
	methods    map[string][]string // type -> its methods
	registered []string            // types registered from init
}

func readRuleFiles(t *testing.T) map[string]*recipeFile {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*recipeFile{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		rf := &recipeFile{types: map[string]bool{}, methods: map[string][]string{}}
		for _, cg := range f.Comments {
			if len(f.Imports) > 0 && cg.Pos() > f.Imports[0].Pos() {
				break
			}
			if cg.Pos() > f.Name.Pos() {
				rf.header += cg.Text()
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						rf.types[ts.Name.Name] = true
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					typ := d.Recv.List[0].Type
					if st, ok := typ.(*ast.StarExpr); ok {
						typ = st.X
					}
					if id, ok := typ.(*ast.Ident); ok {
						rf.methods[id.Name] = append(rf.methods[id.Name], d.Name.Name)
					}
					continue
				}
				ast.Inspect(d, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "register" || len(call.Args) != 1 {
						return true
					}
					if d.Name.Name != "init" {
						t.Errorf("%s: register called from %s: a rule registers from its file's init", fset.Position(call.Pos()), d.Name.Name)
					}
					arg := call.Args[0]
					if u, ok := arg.(*ast.UnaryExpr); ok {
						arg = u.X
					}
					if cl, ok := arg.(*ast.CompositeLit); ok {
						if id, ok := cl.Type.(*ast.Ident); ok {
							rf.registered = append(rf.registered, id.Name)
							return true
						}
					}
					t.Errorf("%s: register's argument is not a value of a named type (T{})", fset.Position(call.Pos()))
					return true
				})
			}
		}
		out[path] = rf
	}
	return out
}

func TestRuleFilesFollowTheRecipe(t *testing.T) {
	t.Parallel()
	files := readRuleFiles(t)
	if len(files) < 20 {
		t.Fatalf("read %d Go files: run from internal/diagnose", len(files))
	}
	registeredIn := map[string]string{} // type -> file registering it
	for path, f := range files {
		for _, typ := range f.registered {
			registeredIn[typ] = path
		}
	}
	for _, r := range diagnose.Rules() {
		id := r.Meta().ID
		typ := reflect.Indirect(reflect.ValueOf(r)).Type().Name()
		own := id + ".go"
		f := files[own]
		if f == nil {
			t.Errorf("rule %s: no %s", id, own)
			continue
		}
		if !f.types[typ] {
			t.Errorf("rule %s: its type %s is not declared in %s", id, typ, own)
		}
		if registeredIn[typ] != own {
			t.Errorf("rule %s: its type %s is registered in %q, not from %s's init", id, typ, registeredIn[typ], own)
		}
		for _, m := range []string{"Meta", "Eval"} {
			found := false
			for _, have := range f.methods[typ] {
				found = found || have == m
			}
			if !found {
				t.Errorf("rule %s: %s.%s is not in %s", id, typ, m, own)
			}
		}
		if !strings.HasPrefix(f.header, id+": ") {
			t.Errorf("rule %s: %s's header does not start with %q (the header says what the rule finds, its mechanism, thresholds and known false positives)", id, own, "// "+id+": ")
		}
		if !strings.Contains(f.header, "Mechanism") {
			t.Errorf("rule %s: %s's header does not say the mechanism (a paragraph starting \"Mechanism\")", id, own)
		}
	}
	// nothing else registers a rule
	for typ, path := range registeredIn {
		found := false
		for _, r := range diagnose.Rules() {
			found = found || reflect.Indirect(reflect.ValueOf(r)).Type().Name() == typ
		}
		if !found {
			t.Errorf("%s registers %s, which is not a rule", path, typ)
		}
	}
}
