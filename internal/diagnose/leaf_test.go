package diagnose_test

// A rule file is a leaf: what it declares (its type, constants, private
// helpers) serves that rule alone. Another rule, the report assembly, the
// fleet scan or an analysis that needs a calculation a rule also makes
// (reclaim rates, daily peaks, baselines, scale-factor advice) takes it
// from internal/model, where the host model and the calculations the rules
// share live. So deleting a rule's file never breaks another file, and a
// new rule is its own file and its cases.

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const diagnosePath = "github.com/memdoctor/memdoctor/internal/diagnose"

// ruleFile reports whether f registers a rule: a call register(...) in it.
func ruleFile(f *ast.File) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "register" {
				found = true
			}
		}
		return !found
	})
	return found
}

// topLevel lists the package-level names f declares (not methods).
func topLevel(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name != "init" {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name != "_" {
							names = append(names, n.Name)
						}
					}
				}
			}
		}
	}
	return names
}

// evalMethods lists the receiver types of f's methods Eval, the method
// that makes a type a rule.
func evalMethods(f *ast.File) []string {
	var types []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || fd.Name.Name != "Eval" || len(fd.Recv.List) != 1 {
			continue
		}
		t := fd.Recv.List[0].Type
		if st, ok := t.(*ast.StarExpr); ok {
			t = st.X
		}
		if id, ok := t.(*ast.Ident); ok {
			types = append(types, id.Name)
		}
	}
	return types
}

func TestRuleFilesAreLeaves(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, p := range paths {
		// Object resolution on: a file's Unresolved idents are the
		// package-level names it takes from the package's other files.
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
	}
	owner := map[string]string{} // name declared by a rule file -> that file
	ruleTypes := map[string]bool{}
	rules := 0
	for p, f := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		evals := evalMethods(f)
		if !ruleFile(f) {
			for _, typ := range evals {
				t.Errorf("%s declares the rule %s (its method Eval) but registers none: a rule lives in its own file, <id>.go", p, typ)
			}
			continue
		}
		rules++
		if len(evals) > 1 {
			t.Errorf("%s holds %d rules %v: one rule per file", p, len(evals), evals)
		}
		for _, typ := range evals {
			ruleTypes[typ] = true
		}
		for _, n := range topLevel(f) {
			owner[n] = p
		}
	}
	if rules < 20 {
		t.Fatalf("found %d rule files: run from internal/diagnose", rules)
	}

	// A rule refers to another by the id in its Meta: otherRule{}.Meta().ID,
	// the rule as registered (its id string is written in its file only).
	byMeta := map[token.Pos]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok && se.Sel.Name == "Meta" {
				if cl, ok := se.X.(*ast.CompositeLit); ok && len(cl.Elts) == 0 {
					if id, ok := cl.Type.(*ast.Ident); ok && ruleTypes[id.Name] {
						byMeta[id.Pos()] = true
					}
				}
			}
			return true
		})
	}

	// The package's own tests may reach into a rule file's helpers.
	var bad []string
	for p, f := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		for _, id := range f.Unresolved {
			o, ok := owner[id.Name]
			if !ok || o == p || byMeta[id.Pos()] {
				continue
			}
			bad = append(bad, fset.Position(id.Pos()).String()+": uses "+id.Name+" of the rule file "+o)
		}
	}

	// Other packages see only the exported names.
	root := filepath.Join("..", "..")
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || filepath.Base(p) == "diagnose" && filepath.Base(filepath.Dir(p)) == "internal" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if !bytes.Contains(src, []byte(strconv.Quote(diagnosePath))) {
				return nil
			}
			f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			name := "diagnose"
			for _, im := range f.Imports {
				if v, _ := strconv.Unquote(im.Path.Value); v == diagnosePath && im.Name != nil {
					name = im.Name.Name
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				se, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := se.X.(*ast.Ident); ok && x.Name == name {
					if o, ok := owner[se.Sel.Name]; ok {
						bad = append(bad, fset.Position(se.Sel.Pos()).String()+": uses diagnose."+se.Sel.Name+" of the rule file "+o)
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
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b + ": move what several files share to internal/model (or a non-rule file of diagnose), keep a rule file to its rule")
	}
}
