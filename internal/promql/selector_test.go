package promql

import "testing"

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
}
