package diagnose_test

// The rules' documentation follows the registry: docs/rules.md's table of
// what each rule gives the report, the fleet scan and the alerts is
// generated from the rules' Meta (go test ./internal/diagnose -run
// TestRulesDoc -update rewrites it), every rule has its section there, and
// the README's rule table names every rule and no other.

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
	readme      = "../../README.md"
	tableBegin  = "<!-- generated from the rules' Meta by TestRulesDoc (go test ./internal/diagnose -run TestRulesDoc -update): do not edit -->\n"
	tableEnd    = "<!-- end of the generated table -->\n"
	tableHeader = "| rule | judges | charts in the report | the fleet scan's pre-filter reads | alerts |\n|---|---|---|---|---|\n"
)

// registryTable is the generated table, one row per rule by id.
func registryTable() string {
	rules := diagnose.Rules()
	sort.Slice(rules, func(i, j int) bool { return rules[i].Meta().ID < rules[j].Meta().ID })
	var b strings.Builder
	b.WriteString(tableHeader)
	for _, r := range rules {
		m := r.Meta()
		judges := "the latest state"
		if m.Trend {
			judges = "a time range only"
		}
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
		b.WriteString("| `" + m.ID + "` | " + judges + " | " + charts + " | " + pre + " | " + alerts + " |\n")
	}
	return b.String()
}

func TestRulesDoc(t *testing.T) {
	raw, err := os.ReadFile(rulesDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated table's markers", rulesDoc)
	}
	got, want := doc[i+len(tableBegin):j], registryTable()
	if got != want {
		if *updateDocs {
			if err := os.WriteFile(rulesDoc, []byte(doc[:i+len(tableBegin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Errorf("%s: the generated table is not the registry's (go test ./internal/diagnose -run TestRulesDoc -update):\n got:\n%s\nwant:\n%s", rulesDoc, got, want)
		}
	}

	// Every rule has its own section or bullet, and none is documented
	// that does not exist.
	known := map[string]bool{lint.RuleKafkaProducerBatching: true}
	var ids []string
	for _, r := range diagnose.Rules() {
		known[r.Meta().ID] = true
		ids = append(ids, r.Meta().ID)
	}
	heading := regexp.MustCompile(`(?m)^(?:## ([a-z0-9_]+)$|- \*\*([a-z0-9_]+)[ :*])`)
	documented := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(doc, -1) {
		id := m[1] + m[2]
		documented[id] = true
		if !known[id] {
			t.Errorf("%s documents %s, which is no rule", rulesDoc, id)
		}
	}
	for _, id := range ids {
		if !documented[id] {
			t.Errorf("%s has no section (## %s) or bullet (- **%s:**) for the rule", rulesDoc, id, id)
		}
	}

	// The README's table: one row (or more) per rule, no row for another.
	rm, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)`")
	var rows []string
	for _, m := range row.FindAllStringSubmatch(string(rm), -1) {
		rows = append(rows, m[1])
		if !known[m[1]] {
			t.Errorf("README.md's rule table names %s, which is no rule", m[1])
		}
	}
	for _, id := range ids {
		if !slices.Contains(rows, id) {
			t.Errorf("README.md's rule table has no row for %s", id)
		}
	}
}
