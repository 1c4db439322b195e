package promql

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// promParseMatch is ParseMatch done with Prometheus' own parser, as
// memdoctor did before it had a reader of its own: the reference the
// reader is held to. Prometheus' parser is linked into this test only.
func promParseMatch(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	p := parser.NewParser(parser.Options{})
	ms, err := p.ParseMetricSelector(s)
	if err != nil && !strings.HasPrefix(s, "{") {
		if ms2, err2 := p.ParseMetricSelector("{" + s + "}"); err2 == nil {
			ms, err = ms2, nil
		}
	}
	if err != nil {
		return "", err
	}
	var parts []string
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			return "", errors.New("metric name")
		}
		parts = append(parts, m.String())
	}
	if len(parts) == 0 {
		return "", nil
	}
	return "{" + strings.Join(parts, ",") + "}", nil
}

// selectorCases are selectors that Prometheus accepts or refuses for a
// reason worth keeping: each is checked against Prometheus' parser, and
// seeds the fuzz target.
var selectorCases = []string{
	``, `{}`, `{ }`, `{,}`, `{,a="b"}`, `{a="b",}`, `{a="b",,}`, `{a="b" , }`,
	`{a="b"}`, `{a!="b"}`, `{a=~"b.*"}`, `{a!~"b|c"}`, `{a="b",c!="d",e=~"f",g!~"h"}`,
	`a="b"`, `a="b",c="d"`, `a="b",`, `a = "b"`, `a`, `a=`, `a="b"}`, `{a="b"`, `{`, `}`,
	`{a='b'}`, "{a=`b`}", "{a=`b\nc`}", "{a=`b\\n`}", `{a="b\nc"}`, "{a=\"b\nc\"}", `{a='it\'s'}`,
	`{a="\""}`, `{a="\'"}`, `{a='\"'}`, `{a="\\"}`, `{a="\a\b\f\n\r\t\v"}`, `{a="\q"}`,
	`{a="\101\x41\u0041\U00000041"}`, `{a="\400"}`, `{a="\377"}`, `{a="\xff"}`, `{a="\x4"}`,
	`{a="\u00e9"}`, `{a="\uD800"}`, `{a="\U00110000"}`, `{a="\U0010FFFF"}`, `{a="\U80000000"}`, `{a="\UFFFFFFFF"}`, `{a="\u12"}`, `{a="\`,
	`{a="é"}`, `{a="日本"}`, "{a=\"\xff\"}", "{a=\"\uFFFD\"}", `{a="\uFFFD"}`, "{a=\"\x00\"}",
	`{a=~"("}`, `{a=~"(("}`, `{a=~"a++"}`, `{a=~"\\d"}`, `{a=~"(?i)x"}`, `{a=~"(?P<n>x)"}`, `{a=~"x{2,1}"}`,
	`{a=~""}`, `{a=""}`, `{a!=""}`, `{a=~".*"}`,
	`{"a"="b"}`, `{'a'="b"}`, "{`a`=\"b\"}", `{"a.b"="c"}`, `{"日本"="c"}`, `{""="c"}`, `{"a b"=~"c"}`,
	`{"up"}`, `{"up",a="b"}`, `{a="b","up"}`, `{"a"}`, `"a"="b"`, `"up"`,
	`{__name__="up"}`, `{__name__=~"u.*"}`, `up`, `up{}`, `up{a="b"}`, `up {a="b"}`, `a:b{c="d"}`, `:a`,
	`{a:b="c"}`, `{1a="b"}`, `{a1="b"}`, `{_="b"}`, `{é="b"}`, `{a-b="c"}`, `{a.b="c"}`,
	`{on="x"}`, `on="x"`, `{bool="x"}`, `bool="x"`, `bool{a="x"}`, `{by="x",and="y",offset="z"}`, `sum{a="b"}`,
	`{inf="x"}`, `inf="x"`, `nan`, `{fill="x"}`, `fill="x"`,
	`{a == "b"}`, `{a =! "b"}`, `{a ~= "b"}`, `{a="b" c="d"}`, `{a="b"}{c="d"}`, `{a="b"} or up`,
	`{a="b"} offset 5m`, `{a="b"}[5m]`, `{a="b"} @ 1`, `({a="b"})`, `{a={b="c"}}`, `{a=b}`, `{a=1}`,
	"{a=\"b\"} # comment", "{a=\"b\", # comment\n c=\"d\"}", "# comment\n{a=\"b\"}", "{# c\n}", `{a="b" # c}`,
	"{\ta=\"b\"\r\n}", "a=\"b\"\n,c=\"d\"", "{a=\"b\"}\x00", "\u00a0{a=\"b\"}", "{\u00a0a=\"b\"}",
	`a="b"} or {c="d"`, `a="b"}{c="d"`, `{a="b"}}`, `{{a="b"}`, `a="x",b=~"(("`,
}

// TestParseSelectorMatchesPrometheus holds the reader to Prometheus'
// parser: the same selectors accepted, in the same canonical form.
func TestParseSelectorMatchesPrometheus(t *testing.T) {
	accepted := 0
	for _, in := range selectorCases {
		if compareWithPrometheus(t, in) {
			accepted++
		}
	}
	// The table must exercise both answers.
	if accepted < 30 || accepted > len(selectorCases)-30 {
		t.Errorf("%d of %d cases accepted: the table no longer covers both sides", accepted, len(selectorCases))
	}
}

// compareWithPrometheus checks one selector and says whether it was
// accepted.
func compareWithPrometheus(t *testing.T, in string) bool {
	t.Helper()
	want, wantErr := promParseMatch(in)
	got, err := ParseMatch(in)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Errorf("ParseMatch(%q) = %q, %v; Prometheus: %q, %v", in, got, err, want, wantErr)
	case got != want:
		t.Errorf("ParseMatch(%q) = %q; Prometheus: %q", in, got, want)
	case err != nil && !strings.Contains(err.Error(), "not a label selector") && !strings.Contains(err.Error(), "without a metric name"):
		t.Errorf("ParseMatch(%q): unclear error %q", in, err)
	}
	if err == nil && got != "" {
		// The canonical form reads back as itself, as far as Prometheus'
		// does (a U+FFFD is written as it is, and then refused).
		again, err := ParseMatch(got)
		promAgain, promErr := promParseMatch(got)
		if (err == nil) != (promErr == nil) || again != promAgain || (err == nil && again != got) {
			t.Errorf("ParseMatch(%q) = %q, which reads back as %q, %v; Prometheus: %q, %v", in, got, again, err, promAgain, promErr)
		}
	}
	return err == nil
}

// The messages say where and what, and what to write instead.
func TestParseMatchErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{job="node"`, "at character 1: the brace is never closed"},
		{`job=~"(("`, `at character 1: label "job": error parsing regexp: missing closing )`},
		{`{job=~"(("}`, `at character 2: label "job": error parsing regexp`},
		{`{job=node}`, `at character 6: unexpected 'n' after =: want a quoted value, such as job="x"`},
		{`{job~"x"}`, `at character 5: unexpected '~' after label "job": want one of = != =~ !~`},
		{`{job="a" dc="b"}`, `at character 10: unexpected 'd' after a matcher: want "," or "}"`},
		{`{job="a\d"}`, `at character 8: unknown escape sequence \d`},
		{`{job="a}`, `at character 6: the string is never closed: end it with "`},
		{`{job="node"} or up`, `at character 14: unexpected 'o' after the selector`},
		{`{"up"}`, "without a metric name"},
		{`up{job="a"}`, "without a metric name"},
	} {
		_, err := ParseMatch(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseMatch(%q): error %v, want it to say %q", c.in, err, c.want)
		}
	}
}

// FuzzParseMatch compares the reader with Prometheus' parser on any
// input: the same accepted, in the same canonical form.
func FuzzParseMatch(f *testing.F) {
	for _, c := range selectorCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 512 || !utf8.ValidString(strings.TrimSpace(in)) && len(in) > 64 {
			return // long inputs add nothing but time
		}
		compareWithPrometheus(t, in)
	})
}

// The benchmarks read the same selector with this reader and with
// Prometheus' parser; most of the time of either goes to compiling the
// regular expressions, which both do the same way.
const benchSelector = `{job="node", instance=~"db-[0-9]+:9100", "host.name"!="", env!~"test|dev",}`

func BenchmarkParseMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseMatch(benchSelector); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseMatchPrometheus(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := promParseMatch(benchSelector); err != nil {
			b.Fatal(err)
		}
	}
}
