package fleet

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Group is the instances sharing one label value.
type Group struct {
	Value    string `json:"value"`
	Affected int    `json:"affected"`
	Total    int    `json:"total"`
}

// Correlation says how the instances a rule fired on spread over a
// label's values.
type Correlation struct {
	Rule     string  `json:"rule"`
	Label    string  `json:"label"`
	Affected int     `json:"affected"`
	Total    int     `json:"total"`
	Groups   []Group `json:"groups"`
	// Concentrated is true when every affected instance shares one value
	// that other instances do not all have.
	Concentrated bool `json:"concentrated"`
	// P is the chance that the affected instances would all fall on that
	// value by luck (one-sided Fisher exact test); set when they do.
	P       float64 `json:"p,omitempty"`
	Summary string  `json:"summary"`
}

// ReleaseSeries turns a kernel release into its series: "5.0.0-37-generic"
// → "5.0.x".
func ReleaseSeries(r string) string {
	f := strings.FieldsFunc(r, func(c rune) bool { return c == '.' || c == '-' || c == '+' || c == '_' })
	if len(f) < 2 {
		return r
	}
	return f[0] + "." + f[1] + ".x"
}

// Correlate groups, for each rule that fired anywhere and each label, the
// instances by the label's value ("release" by kernel series).
func Correlate(ins []*Instance, labels []string) []Correlation {
	rules := map[string]map[string]bool{}
	for _, in := range ins {
		for _, f := range in.Findings {
			if rules[f.ID] == nil {
				rules[f.ID] = map[string]bool{}
			}
			rules[f.ID][in.Instance] = true
		}
	}
	var ids []string
	for id := range rules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []Correlation
	for _, id := range ids {
		hit := rules[id]
		for _, l := range labels {
			byVal := map[string]*Group{}
			for _, in := range ins {
				v := in.Labels[l]
				if l == "release" && v != "" {
					v = ReleaseSeries(v)
				}
				if v == "" {
					v = "(none)"
				}
				g := byVal[v]
				if g == nil {
					g = &Group{Value: v}
					byVal[v] = g
				}
				g.Total++
				if hit[in.Instance] {
					g.Affected++
				}
			}
			c := Correlation{Rule: id, Label: l, Affected: len(hit), Total: len(ins)}
			for _, g := range byVal {
				c.Groups = append(c.Groups, *g)
			}
			sort.Slice(c.Groups, func(i, j int) bool {
				a, b := c.Groups[i], c.Groups[j]
				ra, rb := float64(a.Affected)/float64(a.Total), float64(b.Affected)/float64(b.Total)
				if ra != rb {
					return ra > rb
				}
				return a.Value < b.Value
			})
			if len(c.Groups) > 1 && c.Groups[0].Affected == c.Affected && c.Affected > 0 {
				c.P = hypergeomTail(c.Total, c.Affected, c.Groups[0].Total, c.Affected)
				c.Concentrated = c.P < 0.01
			}
			c.Summary = summary(c)
			out = append(out, c)
		}
	}
	return out
}

func summary(c Correlation) string {
	noun := "hosts"
	what := c.Label + "="
	if c.Label == "release" {
		what = "kernel "
	}
	s := fmt.Sprintf("%s: %d of %d %s", c.Rule, c.Affected, c.Total, noun)
	if c.Concentrated {
		g := c.Groups[0]
		all := "all"
		if c.Affected == 1 {
			all = "the one"
		}
		s += fmt.Sprintf("; %s on %s%s (%d of %d there, p=%.1g)", all, what, g.Value, g.Affected, g.Total, c.P)
		var none []string
		for _, o := range c.Groups[1:] {
			none = append(none, fmt.Sprintf("none of %d on %s%s", o.Total, what, o.Value))
		}
		return s + "; " + strings.Join(none, "; ")
	}
	var parts []string
	for _, g := range c.Groups {
		parts = append(parts, fmt.Sprintf("%d of %d on %s%s", g.Affected, g.Total, what, g.Value))
	}
	return s + "; " + strings.Join(parts, ", ")
}

// hypergeomTail is P(X ≥ k) for X the number of affected among n drawn from
// N instances of which K are affected.
func hypergeomTail(N, K, n, k int) float64 {
	lc := func(a, b int) float64 {
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	p := 0.0
	for x := k; x <= min(n, K); x++ {
		if n-x > N-K {
			continue
		}
		p += math.Exp(lc(K, x) + lc(N-K, n-x) - lc(N, n))
	}
	return math.Min(1, p)
}
