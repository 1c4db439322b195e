// Package exposition reads the series of Prometheus' text exposition and
// OpenMetrics lines: the grammar that the ingestion of metric files
// (package source) and the scrape of a runtime's /metrics page (package
// runtimes) share. It reads one line's parts; what to make of the samples
// is the callers'.
package exposition

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// ErrMalformed is what every error of a malformed line wraps: the
// project's one error for input that does not parse.
var ErrMalformed = procfs.ErrMalformed

// IsBlank reports whether c separates the parts of a line: a space or a
// tab.
func IsBlank(c byte) bool { return c == ' ' || c == '\t' }

// TrimBlanks drops the blanks at both ends of b.
func TrimBlanks(b []byte) []byte {
	for len(b) > 0 && IsBlank(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && IsBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// NextToken returns the next blank-separated token and what follows it.
func NextToken(b []byte) (tok, rest []byte) {
	for len(b) > 0 && IsBlank(b[0]) {
		b = b[1:]
	}
	i := 0
	for i < len(b) && !IsBlank(b[i]) {
		i++
	}
	tok, rest = b[:i], b[i:]
	for len(rest) > 0 && IsBlank(rest[0]) {
		rest = rest[1:]
	}
	return tok, rest
}

// IsNameStart reports whether c may start a metric name.
func IsNameStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// IsNameChar reports whether c may stand in a metric name after its start.
func IsNameChar(c byte) bool { return IsNameStart(c) || (c >= '0' && c <= '9') }

// SeriesEnd returns the length of the series (name and labels) that starts
// line.
func SeriesEnd(line []byte) (int, error) {
	i := 0
	for i < len(line) && IsNameChar(line[i]) {
		i++
	}
	if i == len(line) || line[i] != '{' {
		if i == 0 {
			return 0, fmt.Errorf("%w: no metric name", ErrMalformed)
		}
		return i, nil
	}
	inQuote := false
	for i++; i < len(line); i++ {
		switch c := line[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return i + 1, nil
		}
	}
	if inQuote {
		return 0, fmt.Errorf("%w: unterminated label value", ErrMalformed)
	}
	return 0, fmt.Errorf("%w: no closing brace", ErrMalformed)
}

// ParseSeries parses name{labels} or {"name",labels}. Not sample.ParseKey,
// which reads back Labels.String only: the exposition grammar has blanks,
// quoted UTF-8 names, __name__, Go escapes and empty values (no label).
func ParseSeries(raw []byte) (string, sample.Labels, error) {
	i := 0
	for i < len(raw) && IsNameChar(raw[i]) {
		i++
	}
	name := string(raw[:i])
	if name != "" && !IsNameStart(name[0]) {
		return "", nil, fmt.Errorf("%w: metric name %q starts with a digit", ErrMalformed, name)
	}
	var labels sample.Labels
	if i < len(raw) {
		b := raw[i+1 : len(raw)-1] // inside the braces (seriesEnd checked them)
		for {
			b = TrimBlanks(b)
			if len(b) == 0 {
				break
			}
			var lname string
			var err error
			quoted := b[0] == '"'
			if quoted {
				lname, b, err = parseQuoted(b)
			} else {
				j := 0
				for j < len(b) && IsNameChar(b[j]) && b[j] != ':' {
					j++
				}
				lname, b = string(b[:j]), b[j:]
				if lname == "" || (lname[0] >= '0' && lname[0] <= '9') {
					return "", nil, fmt.Errorf("%w: bad label name near %q", ErrMalformed, truncate(b))
				}
			}
			if err != nil {
				return "", nil, err
			}
			b = TrimBlanks(b)
			if quoted && (len(b) == 0 || b[0] == ',') {
				// {"name", ...}: a quoted metric name.
				if name != "" {
					return "", nil, fmt.Errorf("%w: two metric names", ErrMalformed)
				}
				name = lname
			} else {
				if len(b) == 0 || b[0] != '=' {
					return "", nil, fmt.Errorf("%w: label %q: want =\"value\"", ErrMalformed, lname)
				}
				b = TrimBlanks(b[1:])
				if len(b) == 0 || b[0] != '"' {
					return "", nil, fmt.Errorf("%w: label %q: value is not quoted", ErrMalformed, lname)
				}
				var val string
				if val, b, err = parseQuoted(b); err != nil {
					return "", nil, fmt.Errorf("label %q: %w", lname, err)
				}
				for _, l := range labels {
					if l.Name == lname {
						return "", nil, fmt.Errorf("%w: label %q given twice", ErrMalformed, lname)
					}
				}
				if lname == "__name__" {
					if name != "" {
						return "", nil, fmt.Errorf("%w: two metric names", ErrMalformed)
					}
					name = val
				} else if val != "" {
					labels = append(labels, sample.Label{Name: lname, Value: val})
				}
			}
			b = TrimBlanks(b)
			if len(b) == 0 {
				break
			}
			if b[0] != ',' {
				return "", nil, fmt.Errorf("%w: want , or } near %q", ErrMalformed, truncate(b))
			}
			b = b[1:]
		}
	}
	if name == "" {
		return "", nil, fmt.Errorf("%w: no metric name", ErrMalformed)
	}
	slices.SortFunc(labels, func(a, b sample.Label) int { return strings.Compare(a.Name, b.Name) })
	return name, labels, nil
}

// parseQuoted reads a double-quoted string with \\, \" and \n escapes.
func parseQuoted(b []byte) (string, []byte, error) {
	var sb []byte
	for i := 1; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			s := b[1:i]
			if sb != nil {
				s = sb
			}
			if !utf8.Valid(s) {
				return "", nil, fmt.Errorf("%w: invalid UTF-8 in %q", ErrMalformed, s)
			}
			return string(s), b[i+1:], nil
		case '\\':
			if sb == nil {
				sb = append([]byte(nil), b[1:i]...)
			}
			i++
			if i == len(b) {
				break
			}
			switch b[i] {
			case '\\', '"':
				sb = append(sb, b[i])
			case 'n':
				sb = append(sb, '\n')
			default:
				// Go escapes (\t, \x41, \u00e9, ...), as promtool's dump
				// writes them.
				r, multi, tail, err := strconv.UnquoteChar(string(b[i-1:min(len(b), i+10)]), '"')
				if err != nil {
					return "", nil, fmt.Errorf("%w: invalid escape \\%c", ErrMalformed, b[i])
				}
				if multi {
					sb = utf8.AppendRune(sb, r)
				} else {
					sb = append(sb, byte(r))
				}
				i += min(len(b), i+10) - (i - 1) - len(tail) - 2
			}
		default:
			if sb != nil {
				sb = append(sb, c)
			}
		}
	}
	return "", nil, fmt.Errorf("%w: unterminated quoted string", ErrMalformed)
}

func truncate(b []byte) string {
	if len(b) > 20 {
		return string(b[:20]) + "..."
	}
	return string(b)
}
