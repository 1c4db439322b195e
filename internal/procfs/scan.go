package procfs

// Allocation-free scanning helpers shared by the parsers.
//
// Every parser converts its input to a string once and then works on
// substrings of it: names and text values it returns share that one
// allocation instead of costing one each.

import (
	"iter"
	"strconv"
	"strings"
)

// nextLine returns the first line of s (without its '\n') and the rest.
func nextLine(s string) (line, rest string) {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// lineHint estimates how many records s holds, for pre-sizing results: its
// line count, but at most one per minLen bytes, so blank-line garbage cannot
// make a parser allocate far more than its input.
func lineHint(s string, minLen int) int {
	return min(strings.Count(s, "\n")+1, len(s)/minLen+1)
}

// isSpace says whether c is ASCII white space: one comparison and one bit
// test, where six comparisons in a row took a fifth to a third of the
// parsers' time (every parser splits its lines with it:
// BenchmarkParseSlabinfo 147 to 103 µs, ParseStatusBrief 4.7 to 2.9).
func isSpace(c byte) bool {
	const spaces = 1<<' ' | 1<<'\t' | 1<<'\n' | 1<<'\r' | 1<<'\v' | 1<<'\f'
	return c <= ' ' && uint64(spaces)>>c&1 != 0
}

// trimSpace trims ASCII white space on both ends.
func trimSpace(s string) string {
	return trimRight(trimLeft(s))
}

func trimLeft(s string) string {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:]
}

func trimRight(s string) string {
	j := len(s)
	for j > 0 && isSpace(s[j-1]) {
		j--
	}
	return s[:j]
}

// nextField skips leading blanks and returns the next blank-separated field
// and what follows it (not trimmed). field is "" when s holds no field.
func nextField(s string) (field, rest string) {
	s = trimLeft(s)
	i := 0
	for i < len(s) && !isSpace(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

// lastField returns the last blank-separated field of s and what precedes
// it (not trimmed). field is "" when s holds no field.
func lastField(s string) (rest, field string) {
	s = trimRight(s)
	i := len(s)
	for i > 0 && !isSpace(s[i-1]) {
		i--
	}
	return s[:i], s[i:]
}

// countFields counts the blank-separated fields of s.
func countFields(s string) int {
	n := 0
	for {
		var f string
		f, s = nextField(s)
		if f == "" {
			return n
		}
		n++
	}
}

// atoi parses a decimal integer without allocating. Unsigned values above
// MaxInt64 wrap to negative, which is what the kernel meant when it printed a
// negative counter with %lu.
func atoi[S ~string | ~[]byte](b S) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	n, ok := atou64(b)
	if !ok {
		return 0, false
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	return int64(n), true
}

// atou parses an unsigned decimal integer that must fit in an int64
// (counts, sizes, ids that are never negative).
func atou(s string) (int64, bool) {
	if len(s) == 0 || s[0] == '-' {
		return 0, false
	}
	n, ok := atoi(s)
	if !ok || n < 0 {
		return 0, false
	}
	return n, true
}

// atou64 parses an unsigned decimal integer up to MaxUint64.
func atou64[S ~string | ~[]byte](s S) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// hextou64 parses an unsigned hexadecimal number (no "0x") up to MaxUint64.
func hextou64(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(d)
	}
	return n, true
}

// quote shortens and quotes untrusted text for an error message.
func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

// lines yields the 1-based number and the text of every non-blank line of
// s, untrimmed (maps and mountinfo keep trailing blanks in names).
func lines(s string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		n := 0
		for len(s) > 0 {
			var t string
			t, s = nextLine(s)
			n++
			if trimSpace(t) == "" {
				continue
			}
			if !yield(n, t) {
				return
			}
		}
	}
}
