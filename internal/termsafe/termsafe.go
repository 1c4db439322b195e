// Package termsafe makes strings that memdoctor did not write safe to print
// on a terminal. Process names, command lines, label values from scraped
// pages and files, and Prometheus answers are controlled by other users and
// other machines; printed raw, an ESC sequence in them can move the cursor,
// rewrite lines already printed, retitle the window or hide text, and a
// newline can forge a line of the report.
//
// Every control character is shown as a visible escape instead: C0 (U+0000
// to U+001F, ESC among them), DEL (U+007F), C1 (U+0080 to U+009F: a UTF-8
// terminal reads U+009B as CSI) and bytes that are not UTF-8. What is left
// of an ESC sequence after its ESC is escaped is plain text. The Unicode
// direction controls (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to
// U+2069) are escaped too: printed raw, a name holding U+202E reverses the
// rest of the line, so a finding could be made to read as another's. JSON
// output keeps the exact strings: the JSON encoder escapes C0, and JSON
// rewrites DEL, C1 and the direction controls as \u escapes (the decoded
// string is unchanged).
package termsafe

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every control character, newlines and tabs
// included, written as a visible escape (\x1b, \n, \u009b, \xff for a byte
// that is not UTF-8). For single values: a name, a label, a table cell.
func Escape(s string) string { return escape(s, false) }

// Text is Escape that keeps newlines and tabs: for messages that may span
// lines (errors, notes) but must not carry terminal sequences.
func Text(s string) string { return escape(s, true) }

// Safe reports whether s prints as itself under Escape.
func Safe(s string) bool { return clean(s, false) }

func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 {
			if keepLines && (c == '\n' || c == '\t') {
				continue
			}
			return false
		}
		if c == 0x7f || c >= 0x80 {
			return cleanUTF8(s[i:])
		}
	}
	return true
}

// cleanUTF8 checks the rest of s rune by rune.
func cleanUTF8(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || isControl(r) {
			return false
		}
		i += n
	}
	return true
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || isBidi(r) }

// isBidi reports the characters that change the direction of the text
// after them (explicit embeddings, overrides, isolates and marks).
func isBidi(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

func escape(s string, keepLines bool) string {
	if clean(s, keepLines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f || isBidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Args returns a copy of fmt arguments with every string (of any string
// type), error and fmt.Stringer escaped with Escape; other values (numbers, and Trusted
// strings memdoctor wrote itself) are kept.
func Args(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		switch x := v.(type) {
		case Trusted:
			out[i] = string(x)
		case string:
			out[i] = Escape(x)
		case error:
			out[i] = Escape(x.Error())
		case fmt.Stringer:
			out[i] = Escape(x.String())
		case []string:
			e := make([]string, len(x))
			for j := range x {
				e[j] = Escape(x[j])
			}
			out[i] = e
		default:
			// Named string types (a label value type, an enum) too.
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
				out[i] = Escape(rv.String())
			} else {
				out[i] = v
			}
		}
	}
	return out
}

// Trusted is text memdoctor wrote itself (colour codes, wrapped paragraphs
// of its own): Args passes it through.
type Trusted string

// Fprintf is fmt.Fprintf with Args applied: the format is memdoctor's own,
// the values are escaped.
func Fprintf(w io.Writer, format string, a ...any) (int, error) {
	return fmt.Fprintf(w, format, Args(a)...)
}

// JSON rewrites DEL, C1 and direction control characters in encoded JSON
// as \u escapes. The encoder leaves them raw (they are valid JSON), but a
// terminal acts on them. They can only occur inside strings, where \u00XX decodes to the same
// character, so the document means exactly what it did.
func JSON(b []byte) []byte {
	if !hasJSONControl(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == 0x7f || r >= 0x80 && r <= 0x9f || isBidi(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func hasJSONControl(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case 0x7f:
			return true
		case 0xc2, 0xd8, 0xe2: // lead bytes of C1, U+061C and U+200E to U+2069
			if r, _ := utf8.DecodeRune(b[i:]); r >= 0x80 && r <= 0x9f || isBidi(r) {
				return true
			}
		}
	}
	return false
}
