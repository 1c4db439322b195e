package diagnose_test

import (
	"slices"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/prometheus/prometheus/promql/parser"
)

// TestEveryRuleReachesTheFleet: a fleet scan fetches only the instances
// some rule's pre-filter makes suspects, so a rule without one could never
// fire there. Every rule has one; its queries, and every alert, are valid
// PromQL (with and without a selector, over short and long ranges); an
// instance with no data scores 0.
func TestEveryRuleReachesTheFleet(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	parse := func(rule, what, expr string) {
		t.Helper()
		if _, err := p.ParseExpr(expr); err != nil {
			t.Errorf("%s: %s is not PromQL: %v\n%s", rule, what, err, expr)
		}
	}
	for _, r := range diagnose.Rules() {
		m := r.Meta()
		pf := m.Prefilter
		if pf == nil || pf.Score == nil || pf.Queries == nil && pf.Daily == nil {
			t.Errorf("%s: no fleet pre-filter (Meta.Prefilter with Score and Queries or Daily): a fleet scan would never make an instance a suspect for it", m.ID)
			continue
		}
		for _, match := range []string{"", `{job="node",dc="ams"}`} {
			for _, rng := range []time.Duration{time.Hour, 14 * 24 * time.Hour} {
				if pf.Queries == nil {
					continue
				}
				keys := map[string]bool{}
				for _, q := range pf.Queries(diagnose.PrefilterArgs{Match: match, Range: rng}) {
					if q.Key == "" || keys[q.Key] {
						t.Errorf("%s: query key %q empty or repeated", m.ID, q.Key)
					}
					keys[q.Key] = true
					parse(m.ID, "pre-filter query "+q.Key, q.Expr)
				}
			}
			if pf.Daily != nil {
				parse(m.ID, "daily pre-filter", pf.Daily(match, "1d"))
			}
			if m.Alerts != nil {
				for _, static := range []bool{false, true} {
					for _, a := range m.Alerts(diagnose.AlertOptions{Match: match, StaticBaselines: static}) {
						parse(m.ID, "alert "+a.Name, a.Expr)
						if a.Name == "" || a.Summary == "" || a.Severity == "" || a.For == "" {
							t.Errorf("%s: alert %+v incomplete", m.ID, a)
						}
					}
				}
			}
		}
		if s := pf.Score(diagnose.PrefilterValues{Values: map[string]float64{}, Total: 64 << 30, Days: 14}); s != 0 {
			t.Errorf("%s: an instance without data scores %v", m.ID, s)
		}
		for _, c := range m.Charts {
			if !slices.Contains(diagnose.ChartKinds(), c) {
				t.Errorf("%s: unknown kind of chart %q", m.ID, c)
			}
		}
	}
}
