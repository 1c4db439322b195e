package lint

// Java .properties (java.util.Properties.load) and librdkafka configuration
// files (key=value lines, as rdkafka's tools and most wrappers read them)
// share one syntax:
//
//	# a comment (also "!"), after optional leading white space
//	batch.size = 16384          key, then "=", ":" or white space, then value
//	linger.ms:5
//	client.id  my\ producer     "\ " is a space; \t \n \r \f \uXXXX, "\\"
//	bootstrap.servers=a:9092,\
//	    b:9092                  an odd number of trailing "\" continues the
//	                            line; the next line's leading space is dropped
//
// A librdkafka file never uses escapes or continuations, so parsing it as
// properties is exact for what librdkafka accepts.

import (
	"fmt"
	"strconv"
	"strings"
)

// Setting is one key and its value as written, with the line it starts on.
type Setting struct {
	Key   string
	Value string
	Line  int
	// Literal is false when the value is an expression this parser cannot
	// evaluate (a Python variable): Value then holds the source text.
	Literal bool
	// DictQuote is, for a Python dict entry ('batch_size': 20), the quote
	// its key was written with; empty for a keyword argument and for
	// properties.
	DictQuote string
}

// ParseError is malformed input, with the file and line.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ParseProperties parses Java properties / librdkafka config text. A later
// setting of the same key wins, as it does in both loaders; all are kept
// in order.
func ParseProperties(data []byte, file string) ([]Setting, error) {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n"), "\n")
	var out []Setting
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := strings.TrimLeft(lines[i], " \t\f")
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		// Join continuation lines: an odd run of trailing backslashes.
		logical := l
		for trailingBackslashes(logical)%2 == 1 {
			logical = logical[:len(logical)-1]
			if i+1 >= len(lines) {
				break
			}
			i++
			logical += strings.TrimLeft(lines[i], " \t\f")
		}
		key, val := splitProperty(logical)
		k, err := unescape(key)
		if err != nil {
			return nil, &ParseError{File: file, Line: start, Msg: fmt.Sprintf("key %q: %v", key, err)}
		}
		v, err := unescape(val)
		if err != nil {
			return nil, &ParseError{File: file, Line: start, Msg: fmt.Sprintf("value of %s: %v", k, err)}
		}
		out = append(out, Setting{Key: k, Value: v, Line: start, Literal: true})
	}
	return out, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// splitProperty splits at the first unescaped "=", ":" or white space; white
// space around the separator is dropped.
func splitProperty(l string) (key, val string) {
	i := 0
	for i < len(l) {
		c := l[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i >= len(l) {
		return l, ""
	}
	key = l[:i]
	rest := strings.TrimLeft(l[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as Java does
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uXXXX escape`)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uXXXX escape %q`, s[i-1:i+5])
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
