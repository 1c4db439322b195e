package sample

import (
	"slices"
	"testing"
)

// ParseKey reads back every key Metric.Key writes, commas, braces, quotes
// and newlines in values included (the test readers this replaced split
// on every comma, or stopped at the first quote).
func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, m := range []Metric{
		{Name: "up"},
		{Name: "m", Labels: L("a", "")},
		{Name: "m", Labels: L("a", "x,y", "b", "}", "c", `say "hi" \o/`+"\n")},
		{Name: "node_cgroups_cgroups", Labels: L("subsys_name", "memory")},
		{Labels: L("__name__", "x")},
	} {
		name, ls, err := ParseKey(m.Key())
		if err != nil || name != m.Name || !slices.Equal(ls, m.Labels) {
			t.Errorf("ParseKey(%q) = %q, %v, %v; want %q, %v", m.Key(), name, ls, err, m.Name, m.Labels)
		}
	}
	for _, bad := range []string{`m{`, `m{a}`, `m{a="1"`, `m{a="1"b="2"}`, `m{a="\q"}`, `{a="1",}x`} {
		if _, _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) = nil error, want one", bad)
		}
	}
}
