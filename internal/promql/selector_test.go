package promql

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

func TestSelector(t *testing.T) {
	for _, c := range []struct{ name, match, want string }{
		{"up", "", "up"},
		{"up", " { job=\"node\" } ", `up{job="node"}`},
		{"up", `job="node",dc="ams"`, `up{job="node",dc="ams"}`},
		{"", "", ""},
	} {
		if got := Selector(c.name, c.match); got != c.want {
			t.Errorf("Selector(%q, %q) = %q, want %q", c.name, c.match, got, c.want)
		}
	}
	if got := Selector("", `{job="x"}`, `__name__=~"a|b"`); got != `{__name__=~"a|b",job="x"}` {
		t.Errorf("with extra matchers: %q", got)
	}
	// An empty extra matcher (a group selector left empty) is left out:
	// one copy of this builder did, this one wrote up{,job="x"}, which
	// Prometheus refuses.
	for _, c := range []struct {
		name, match string
		extra       []string
		want        string
	}{
		{"up", `{job="x"}`, []string{""}, `up{job="x"}`},
		{"up", "", []string{"", `a="b"`}, `up{a="b"}`},
		{"up", "", []string{""}, "up"},
		{"", `job="x"`, []string{`__name__=~"a|b"`, ""}, `{__name__=~"a|b",job="x"}`},
	} {
		got := Selector(c.name, c.match, c.extra...)
		if got != c.want {
			t.Errorf("Selector(%q, %q, %q) = %q, want %q", c.name, c.match, c.extra, got, c.want)
		}
		if _, err := parser.NewParser(parser.Options{}).ParseMetricSelector(got); err != nil {
			t.Errorf("Selector(%q, %q, %q) = %q: Prometheus refuses it: %v", c.name, c.match, c.extra, got, err)
		}
	}
}

// --match is parsed as Prometheus parses it (matchers_test.go holds the
// reader to Prometheus' parser): `{` was accepted and sent on to every
// query.
func TestParseMatch(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"", "", ""},
		{"  ", "", ""},
		{"{}", "", ""},
		{`{job="node"}`, `{job="node"}`, ""},
		{` { job = "node" , dc=~"ams.*" } `, `{job="node",dc=~"ams.*"}`, ""},
		{`job="node",dc!="x"`, `{job="node",dc!="x"}`, ""},
		{`{job="a\"b"}`, `{job="a\"b"}`, ""},
		{"{", "", "not a label selector"},
		{`{job="node"`, "", "not a label selector"},
		{`{job=~"(("}`, "", "not a label selector"},
		{`job`, "", "without a metric name"},
		{`up{job="node"}`, "", "without a metric name"},
		{`{__name__="up"}`, "", "without a metric name"},
		{`{job="node"} or up`, "", "not a label selector"},
	} {
		got, err := ParseMatch(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ParseMatch(%q) = %q, %v; want %q, %q", c.in, got, err, c.want, c.err)
		}
	}
	// What it returns goes into selectors as they are built.
	m, _ := ParseMatch(`job="node"`)
	if got := Selector("up", m); got != `up{job="node"}` {
		t.Errorf("Selector with a parsed match: %q", got)
	}
}
