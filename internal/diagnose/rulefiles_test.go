package diagnose_test

// Adding a rule touches its file and its testdata directory only: the rule
// lives in <id>.go (its Meta carries its charts, fleet pre-filter, alerts
// and documentation), its cases in testdata/<id>/, and nothing else in the
// package lists the rules. So a registered rule's id, as a string, is
// written in its own file and nowhere else here: a rule that refers to
// another takes the id from that rule's Meta. Comments may name rules.
// Outside this package TestRuleIDsStayInDiagnose (internal/) holds the
// same line, and TestRulesDoc generates docs/rules.md's two tables from
// the registry.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
)

func TestRuleIDsInTheirOwnFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	literals := map[string][]string{} // file -> its string literals
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					s = lit.Value
				}
				literals[path] = append(literals[path], s)
			}
			return true
		})
	}
	if len(literals) < 20 {
		t.Fatalf("read %d Go files: run from internal/diagnose", len(literals))
	}
	rules := diagnose.Rules()
	if len(rules) == 0 {
		t.Fatal("no rule registered")
	}
	for _, r := range rules {
		id := r.Meta().ID
		word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(id) + `($|[^A-Za-z0-9_])`)
		own := id + ".go"
		if _, ok := literals[own]; !ok {
			t.Errorf("rule %s is not in %s: one rule per file, named by its id", id, own)
		} else if !containsMatch(literals[own], word) {
			t.Errorf("%s does not state the id %s", own, id)
		}
		if st, err := os.Stat(filepath.Join("testdata", id)); err != nil || !st.IsDir() {
			t.Errorf("rule %s has no testdata/%s/ for its cases", id, id)
		}
		for path, lits := range literals {
			if path == own {
				continue
			}
			for _, s := range lits {
				if word.MatchString(s) {
					t.Errorf("%s names the rule %s in %q: only %s may; take the id from the rule's Meta", path, id, s, own)
				}
			}
		}
	}
}

func containsMatch(ss []string, re *regexp.Regexp) bool {
	for _, s := range ss {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
