package promql

// A reader of PromQL vector selectors, the part of PromQL that --match
// takes: `{job="node", dc=~"ams.*"}`, or a metric name with or without
// braces after it. It accepts what Prometheus' own parser accepts for a
// metric selector (its ParseMetricSelector) and builds the same matchers,
// so that what the user writes means here what it means to Prometheus:
//
//   - label names are identifiers ([A-Za-z_][A-Za-z0-9_]*) or quoted
//     strings (Prometheus 3's UTF-8 names, `{"host.name"="a"}`); a quoted
//     string alone in the braces is a metric name;
//   - values are strings in double or single quotes, with Go's escapes
//     (\a \b \f \n \r \t \v \\, the string's own quote, \NNN octal, \xNN,
//     \uNNNN, \UNNNNNNNN), or in backticks, raw, over several lines;
//   - the operators are = != =~ !~, and a regular expression must compile
//     as Prometheus compiles it (RE2, anchored at both ends);
//   - a comma may end the list; spaces, tabs, newlines and `#` comments to
//     the end of the line may stand between the parts.
//
// The matchers are written back in Prometheus' canonical form (see
// matcher.String), and a regular expression is checked as Prometheus
// checks it. Prometheus' parser itself is not linked: it brings the whole
// query language and its dependencies into start-up.

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"regexp"
	"regexp/syntax"
)

// metricNameLabel is the label that holds a series' metric name.
const metricNameLabel = "__name__"

// matchType is a matcher's operator.
type matchType int

const (
	matchEqual matchType = iota
	matchNotEqual
	matchRegexp
	matchNotRegexp
)

func (t matchType) String() string {
	return [...]string{matchEqual: "=", matchNotEqual: "!=", matchRegexp: "=~", matchNotRegexp: "!~"}[t]
}

// matcher is one label matcher of a selector.
type matcher struct {
	Type  matchType
	Name  string
	Value string
}

// newMatcher makes a matcher, checking a regular expression as Prometheus
// does: RE2 syntax with Perl's classes, "." matching newlines too, and
// anchored at both ends (the whole value must match).
func newMatcher(t matchType, name, value string) (*matcher, error) {
	if t == matchRegexp || t == matchNotRegexp {
		re, err := syntax.Parse(value, syntax.Perl|syntax.DotNL)
		if err != nil {
			return nil, err
		}
		// The parsed form, not the text: "\Q" quotes to the end, so
		// text after it would be quoted too.
		if _, err := regexp.Compile("^(?s:" + re.String() + ")$"); err != nil {
			return nil, err
		}
	}
	return &matcher{Type: t, Name: name, Value: value}, nil
}

// String is the matcher in Prometheus' canonical form: the name bare when
// it is an identifier (letters, digits, underscores, not a digit first),
// else quoted, then the operator and the value quoted as a Go string:
// job="node", "host.name"=~"a.*".
func (m *matcher) String() string {
	name := m.Name
	if !isIdentifier(name) {
		name = strconv.Quote(name)
	}
	return name + m.Type.String() + strconv.Quote(m.Value)
}

// isIdentifier reports whether s is a label name that needs no quotes.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentStart(s[i]) && (i == 0 || !isDigit(s[i])) {
			return false
		}
	}
	return true
}

// selectorError is a syntax error in a selector, with the byte offset it
// was found at.
type selectorError struct {
	pos int
	msg string
}

func (e *selectorError) Error() string {
	return fmt.Sprintf("at character %d: %s", e.pos+1, e.msg)
}

// selectorReader reads one selector from in.
type selectorReader struct {
	in  string
	pos int
}

func (r *selectorReader) fail(pos int, format string, args ...any) error {
	return &selectorError{pos: pos, msg: fmt.Sprintf(format, args...)}
}

// parseSelector reads a whole vector selector: a metric name, a list of
// matchers in braces, or both. A metric name becomes a __name__ matcher,
// after the others as Prometheus puts it.
func parseSelector(in string) ([]*matcher, error) {
	r := &selectorReader{in: in}
	if err := r.skip(); err != nil {
		return nil, err
	}
	var name string
	namePos := r.pos
	if r.pos < len(r.in) && (isIdentStart(r.in[r.pos]) || r.in[r.pos] == ':') {
		for r.pos < len(r.in) && (isIdentStart(r.in[r.pos]) || isDigit(r.in[r.pos]) || r.in[r.pos] == ':') {
			r.pos++
		}
		name = r.in[namePos:r.pos]
		if err := r.skip(); err != nil {
			return nil, err
		}
	}
	var ms []*matcher
	switch {
	case r.pos < len(r.in) && r.in[r.pos] == '{':
		var err error
		if ms, err = r.braces(); err != nil {
			return nil, err
		}
		if err := r.skip(); err != nil {
			return nil, err
		}
	case name == "":
		return nil, r.fail(r.pos, "%s: want a list of label matchers in braces, such as {job=\"node\"}", r.found())
	}
	if r.pos < len(r.in) {
		return nil, r.fail(r.pos, "%s after the selector: give one selector, nothing else", r.found())
	}
	if name != "" {
		ms = append(ms, &matcher{Type: matchEqual, Name: metricNameLabel, Value: name})
	}
	return ms, nil
}

// braces reads `{matcher, ...}` from the opening brace on.
func (r *selectorReader) braces() ([]*matcher, error) {
	open := r.pos
	r.pos++ // {
	ms := []*matcher{}
	for {
		if err := r.skip(); err != nil {
			return nil, err
		}
		if r.pos >= len(r.in) {
			return nil, r.fail(open, "the brace is never closed: end the matchers with }")
		}
		if r.in[r.pos] == '}' && len(ms) == 0 { // {}: no matchers
			r.pos++
			return ms, nil
		}
		m, err := r.matcher()
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
		if err := r.skip(); err != nil {
			return nil, err
		}
		switch {
		case r.pos >= len(r.in):
			return nil, r.fail(open, "the brace is never closed: end the matchers with }")
		case r.in[r.pos] == '}':
			r.pos++
			return ms, nil
		case r.in[r.pos] == ',':
			r.pos++
			// A comma may end the list, but may not stand alone or twice.
			if err := r.skip(); err != nil {
				return nil, err
			}
			if r.pos < len(r.in) && r.in[r.pos] == '}' {
				r.pos++
				return ms, nil
			}
		default:
			return nil, r.fail(r.pos, "%s after a matcher: want \",\" or \"}\"", r.found())
		}
	}
}

// matcher reads `name op "value"`, or a quoted metric name alone.
func (r *selectorReader) matcher() (*matcher, error) {
	start := r.pos
	var name string
	switch c := r.in[r.pos]; {
	case isIdentStart(c):
		for r.pos < len(r.in) && (isIdentStart(r.in[r.pos]) || isDigit(r.in[r.pos])) {
			r.pos++
		}
		name = r.in[start:r.pos]
	case c == '"' || c == '\'' || c == '`':
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		name = s
		if err := r.skip(); err != nil {
			return nil, err
		}
		if r.pos < len(r.in) && (r.in[r.pos] == ',' || r.in[r.pos] == '}') {
			// {"metric.name"}: a metric name inside the braces.
			return &matcher{Type: matchEqual, Name: metricNameLabel, Value: name}, nil
		}
	default:
		return nil, r.fail(r.pos, "%s: want a label name (job, or \"quoted\") or \"}\"", r.found())
	}
	if err := r.skip(); err != nil {
		return nil, err
	}
	opPos := r.pos
	var t matchType
	switch rest := r.in[r.pos:]; {
	case strings.HasPrefix(rest, "=~"):
		t, r.pos = matchRegexp, r.pos+2
	case strings.HasPrefix(rest, "!~"):
		t, r.pos = matchNotRegexp, r.pos+2
	case strings.HasPrefix(rest, "!="):
		t, r.pos = matchNotEqual, r.pos+2
	case strings.HasPrefix(rest, "="):
		t, r.pos = matchEqual, r.pos+1
	default:
		return nil, r.fail(r.pos, "%s after label %q: want one of = != =~ !~", r.found(), name)
	}
	if err := r.skip(); err != nil {
		return nil, err
	}
	if r.pos >= len(r.in) || (r.in[r.pos] != '"' && r.in[r.pos] != '\'' && r.in[r.pos] != '`') {
		return nil, r.fail(r.pos, "%s after %s: want a quoted value, such as %s%s\"x\"", r.found(), r.in[opPos:opPos+len(t.String())], name, t)
	}
	value, err := r.str()
	if err != nil {
		return nil, err
	}
	m, err := newMatcher(t, name, value)
	if err != nil {
		return nil, r.fail(start, "label %q: %v", name, err)
	}
	return m, nil
}

// found names what stands at the reading position, for messages.
func (r *selectorReader) found() string {
	if r.pos >= len(r.in) {
		return "end of input"
	}
	c, _ := utf8.DecodeRuneInString(r.in[r.pos:])
	return "unexpected " + strconv.QuoteRune(c)
}

// skip passes spaces, tabs, newlines and comments (# to the end of the
// line). Only the ASCII spaces PromQL knows are spaces.
func (r *selectorReader) skip() error {
	for r.pos < len(r.in) {
		switch r.in[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		case '#':
			for r.pos < len(r.in) && r.in[r.pos] != '\n' && r.in[r.pos] != '\r' {
				r.pos++
			}
		default:
			return nil
		}
	}
	return nil
}

// str reads a quoted string and returns its value. In double and single
// quotes, escapes are decoded and a newline is refused; in backticks
// nothing is escaped. The text itself must be valid UTF-8 (and, as in
// Prometheus, must not hold U+FFFD, which cannot be told from a bad byte);
// escapes may still make bytes that are not.
func (r *selectorReader) str() (string, error) {
	start := r.pos
	q := r.in[r.pos]
	r.pos++
	var b strings.Builder
	for {
		if r.pos >= len(r.in) {
			return "", r.fail(start, "the string is never closed: end it with %c", q)
		}
		c, w := utf8.DecodeRuneInString(r.in[r.pos:])
		switch {
		case c == utf8.RuneError:
			return "", r.fail(r.pos, "invalid UTF-8 in a string")
		case c == rune(q):
			r.pos += w
			return b.String(), nil
		case c == '\n' && q != '`':
			return "", r.fail(start, "the string is never closed on its line: end it with %c (use \\n for a newline)", q)
		case c == '\\' && q != '`':
			if err := r.escape(&b, q); err != nil {
				return "", err
			}
		default:
			b.WriteString(r.in[r.pos : r.pos+w])
			r.pos += w
		}
	}
}

// escape decodes the escape sequence at the reading position (a
// backslash) into b.
func (r *selectorReader) escape(b *strings.Builder, q byte) error {
	start := r.pos
	r.pos++ // the backslash
	if r.pos >= len(r.in) {
		return r.fail(start, "the escape sequence is not finished")
	}
	c := r.in[r.pos]
	r.pos++
	if v, ok := simpleEscapes[c]; ok {
		b.WriteByte(v)
		return nil
	}
	if c == q {
		b.WriteByte(q)
		return nil
	}
	var digits, base int
	var limit rune
	switch c {
	case '0', '1', '2', '3', '4', '5', '6', '7':
		r.pos-- // the first digit is part of the number
		digits, base, limit = 3, 8, 255
	case 'x':
		digits, base, limit = 2, 16, 255
	case 'u':
		digits, base, limit = 4, 16, utf8.MaxRune
	case 'U':
		digits, base, limit = 8, 16, utf8.MaxRune
	default:
		d, _ := utf8.DecodeRuneInString(r.in[r.pos-1:])
		return r.fail(start, "unknown escape sequence \\%c: a backslash must be doubled (\\\\) or start one of \\a \\b \\f \\n \\r \\t \\v \\%c \\NNN \\xNN \\uNNNN \\UNNNNNNNN", d, q)
	}
	var v uint32 // 8 hex digits may not fit a rune
	for range digits {
		if r.pos >= len(r.in) {
			return r.fail(start, "the escape sequence is not finished")
		}
		d := digitValue(r.in[r.pos])
		if d >= base {
			bad, _ := utf8.DecodeRuneInString(r.in[r.pos:])
			return r.fail(r.pos, "%q cannot stand in this escape sequence (want %d digits in base %d)", bad, digits, base)
		}
		v = v*uint32(base) + uint32(d)
		r.pos++
	}
	if v > uint32(limit) || (v >= 0xD800 && v < 0xE000) {
		return r.fail(start, "the escape sequence %s is not a valid Unicode code point", r.in[start:r.pos])
	}
	if c == 'u' || c == 'U' {
		b.WriteRune(rune(v))
	} else {
		b.WriteByte(byte(v)) // \x and octal make single bytes, UTF-8 or not
	}
	return nil
}

// simpleEscapes are the one-letter escapes and what they stand for.
var simpleEscapes = map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\'}

func digitValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return 16
}

func isIdentStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
