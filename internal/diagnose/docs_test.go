package diagnose_test

// The rules' documentation follows the registry: docs/rules.md's table of
// what each rule gives the report, the fleet scan and the alerts is
// generated from the rules' Meta (go test ./internal/diagnose -run
// TestRulesDoc -update rewrites it), every rule has its section there, and
// its table of mechanisms, generated too, names every rule and no other.

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/lint"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated table of docs/rules.md")

const (
	rulesDoc    = "../../docs/rules.md"
	tableBegin  = "<!-- generated from the rules' Meta by TestRulesDoc (go test ./internal/diagnose -run TestRulesDoc -update): do not edit -->\n"
	mechBegin   = "<!-- the rules' mechanisms, generated from their Meta by TestRulesDoc (go test ./internal/diagnose -run TestRulesDoc -update): do not edit -->\n"
	tableEnd    = "<!-- end of the generated table -->\n"
	tableHeader = "| rule | judges | charts in the report | the fleet scan's pre-filter reads | alerts |\n|---|---|---|---|---|\n"
)

// sortedRules are the registered rules by id.
func sortedRules() []diagnose.Rule {
	rules := diagnose.Rules()
	sort.Slice(rules, func(i, j int) bool { return rules[i].Meta().ID < rules[j].Meta().ID })
	return rules
}

// judges says what a rule judges: a trend rule only a time range (not
// check's snapshot), the others both.
func judges(m diagnose.Meta) string {
	if m.Trend {
		return "a time range only"
	}
	return "a snapshot or a time range"
}

// mechanismTable is the generated table of what each rule judges.
func mechanismTable() string {
	var b strings.Builder
	b.WriteString("| id | judges | mechanism |\n|---|---|---|\n")
	for _, r := range sortedRules() {
		m := r.Meta()
		b.WriteString("| `" + m.ID + "` | " + judges(m) + " | " + m.Doc + " |\n")
	}
	return b.String()
}

// checkGenerated compares the text between begin and the end marker in
// path with want, or rewrites it with -update. It returns the document and
// the table as they are now.
func checkGenerated(t *testing.T, path, begin, want string) (string, string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, begin)
	j := -1
	if i >= 0 {
		j = strings.Index(doc[i:], tableEnd)
	}
	if i < 0 || j < 0 {
		t.Fatalf("%s lacks the generated table's markers (%q and %q)", path, strings.TrimSpace(begin), strings.TrimSpace(tableEnd))
	}
	j += i
	got := doc[i+len(begin) : j]
	if got != want {
		if !*updateDocs {
			t.Errorf("%s: the generated table is not the registry's (go test ./internal/diagnose -run TestRulesDoc -update):\n got:\n%s\nwant:\n%s", path, got, want)
			return doc, got
		}
		doc = doc[:i+len(begin)] + want + doc[j:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return doc, want
}

// registryTable is the generated table, one row per rule by id.
func registryTable() string {
	var b strings.Builder
	b.WriteString(tableHeader)
	for _, r := range sortedRules() {
		m := r.Meta()
		charts := "—"
		if len(m.Charts) > 0 {
			charts = strings.Join(m.Charts, ", ")
		}
		pre := "—"
		if m.Prefilter != nil {
			pre = m.Prefilter.About
		}
		alerts := "—"
		if m.Alerts != nil {
			var names []string
			for _, a := range m.Alerts(diagnose.AlertOptions{}) {
				names = append(names, a.Name)
			}
			alerts = strings.Join(names, ", ")
		}
		b.WriteString("| `" + m.ID + "` | " + judges(m) + " | " + charts + " | " + pre + " | " + alerts + " |\n")
	}
	return b.String()
}

func TestRulesDoc(t *testing.T) {
	checkGenerated(t, rulesDoc, tableBegin, registryTable())
	doc, mech := checkGenerated(t, rulesDoc, mechBegin, mechanismTable())

	// Every rule has a one-line Doc; a section or bullet that tells more
	// documents an existing rule.
	known := map[string]bool{lint.RuleKafkaProducerBatching: true}
	var ids []string
	for _, r := range diagnose.Rules() {
		known[r.Meta().ID] = true
		ids = append(ids, r.Meta().ID)
	}
	heading := regexp.MustCompile(`(?m)^(?:## ([a-z0-9_]+)$|- \*\*([a-z0-9_]+)[ :*])`)
	for _, m := range heading.FindAllStringSubmatch(doc, -1) {
		if id := m[1] + m[2]; !known[id] {
			t.Errorf("%s documents %s, which is no rule", rulesDoc, id)
		}
	}
	for _, r := range diagnose.Rules() {
		if m := r.Meta(); m.Doc == "" || strings.Contains(m.Doc, "|") || strings.Contains(m.Doc, "\n") {
			t.Errorf("%s: Doc %q: want one line without |", m.ID, m.Doc)
		}
	}

	// The table of mechanisms names only rules that exist, and every rule.
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)`")
	var rows []string
	for _, m := range row.FindAllStringSubmatch(mech, -1) {
		rows = append(rows, m[1])
		if !known[m[1]] {
			t.Errorf("%s's table of mechanisms names %s, which is no rule", rulesDoc, m[1])
		}
	}
	for _, id := range ids {
		if !slices.Contains(rows, id) {
			t.Errorf("%s's table of mechanisms has no row for %s", rulesDoc, id)
		}
	}
}
