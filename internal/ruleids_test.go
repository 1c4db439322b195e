package internal_test

// A rule owns what it knows: its charts, its fleet pre-filter, its alerts
// and its documentation live in its Meta, and other packages iterate the
// registry. So no Go source outside internal/diagnose names a rule: a
// string literal holding a registered rule's id (as a whole word) fails
// here. Tests, testdata and test generators (packages named ...test, and
// the synthetic fleet's) are free to name the rules they check.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
)

func TestRuleIDsStayInDiagnose(t *testing.T) {
	var ids []string
	for _, r := range diagnose.Rules() {
		ids = append(ids, regexp.QuoteMeta(r.Meta().ID))
	}
	if len(ids) == 0 {
		t.Fatal("no rule registered")
	}
	word := regexp.MustCompile(`(^|[^A-Za-z0-9_])(` + strings.Join(ids, "|") + `)($|[^A-Za-z0-9_])`)
	files := shippedGoFiles(t, "internal/diagnose")
	for _, sf := range files {
		path := sf.Path
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		tags := map[*ast.BasicLit]bool{} // a struct tag names a JSON key, not a rule
		ast.Inspect(f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.Field); ok && fd.Tag != nil {
				tags[fd.Tag] = true
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || tags[lit] {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			if m := word.FindStringSubmatch(s); m != nil {
				t.Errorf("%s: names the rule %s (%s): take what is needed from the rule's Meta", fset.Position(lit.Pos()), m[2], lit.Value)
			}
			return true
		})
	}
}
