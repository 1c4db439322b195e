package sample

import (
	"slices"
	"strings"
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

// UnquoteValue reads one quoted value and says how much of s it took (the
// rest is the caller's: a comma, a brace, the rest of a line), and refuses
// what Labels.String never writes.
func TestUnquoteValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, val string
		n       int
	}{
		{`""`, "", 2},
		{`"x,y"} 1`, "x,y", 5},
		{`"say \"hi\" \\o/\n",b="2"}`, "say \"hi\" \\o/\n", 19},
		{`"}"`, "}", 3},
	} {
		val, n, err := UnquoteValue(c.in)
		if err != nil || val != c.val || n != c.n {
			t.Errorf("UnquoteValue(%q) = %q, %d, %v; want %q, %d", c.in, val, n, err, c.val, c.n)
		}
	}
	for _, c := range []struct{ in, err string }{
		{``, "not quoted"}, {`x"`, "not quoted"}, {`"abc`, "unterminated"}, {`"abc\`, "unterminated"},
		{`"a\"`, "unterminated"}, {`"\t"`, `bad escape \t`}, {`"\q"`, `bad escape \q`},
	} {
		if _, _, err := UnquoteValue(c.in); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("UnquoteValue(%q) error %v, want one saying %q", c.in, err, c.err)
		}
	}
	// Every value Labels.String writes comes back whole.
	for _, v := range []string{"", "plain", "x,y", "}", `say "hi" \o/` + "\n", "\\\\\"\n\n"} {
		q := L("a", v).String()[len(`{a=`) : len(L("a", v).String())-1]
		got, n, err := UnquoteValue(q)
		if err != nil || got != v || n != len(q) {
			t.Errorf("UnquoteValue(%q) = %q, %d, %v; want %q, %d", q, got, n, err, v, len(q))
		}
	}
}
