package lint

// kafka-python producer settings, read from Python source without running
// it. What is recognised:
//
//	producer = KafkaProducer(bootstrap_servers="k:9092", batch_size=20, linger_ms=0)
//	conf = {"batch_size": 64 * 1024, 'linger_ms': 500}     a dict literal
//	conf = dict(batch_size=16384)                          keyword arguments
//
// that is, every `name=value` keyword argument and every `'name': value`
// dict entry whose name is a kafka-python producer setting, anywhere in the
// file (comments and strings skipped). A value is evaluated when it is an
// integer or float literal (underscores allowed), or such literals joined by
// * + - and << (64 * 1024, 1 << 16); True/False/None and strings are kept as
// text; anything else (a variable, a call) is kept as source text and not
// judged. The parser is a tokenizer, not a Python parser: it never fails on
// code it does not understand, it only finds fewer settings.

import (
	"strconv"
	"strings"
	"unicode"
)

// pythonKeys are the kafka-python producer settings this file looks for.
var pythonKeys = map[string]bool{
	"batch_size": true, "linger_ms": true, "buffer_memory": true, "max_request_size": true,
	"compression_type": true, "acks": true, "max_in_flight_requests_per_connection": true,
	"send_buffer_bytes": true,
}

type pyTok struct {
	kind byte // 'n' name, 'v' number, 's' string, 'p' punctuation
	text string
	line int
}

func tokenizePython(src string) []pyTok {
	var toks []pyTok
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\\':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			start, startLine := i, line
			q := string(c)
			if strings.HasPrefix(src[i:], strings.Repeat(q, 3)) {
				q = strings.Repeat(q, 3)
			}
			i += len(q)
			for i < len(src) && !strings.HasPrefix(src[i:], q) {
				if src[i] == '\\' {
					i++
				} else if src[i] == '\n' {
					line++
					if len(q) == 1 {
						break // an unterminated short string ends at the line
					}
				}
				i++
			}
			i = min(i+len(q), len(src))
			toks = append(toks, pyTok{'s', src[start:i], startLine})
		case c == '_' || c < 0x80 && unicode.IsLetter(rune(c)):
			start := i
			for i < len(src) && (src[i] == '_' || src[i] < 0x80 && (unicode.IsLetter(rune(src[i])) || unicode.IsDigit(rune(src[i])))) {
				i++
			}
			toks = append(toks, pyTok{'n', src[start:i], line})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			start := i
			for i < len(src) && (src[i] == '_' || src[i] == '.' || src[i] >= '0' && src[i] <= '9' || src[i] == 'e' || src[i] == 'E' ||
				src[i] == 'x' || src[i] == 'X' || src[i] >= 'a' && src[i] <= 'f' || src[i] >= 'A' && src[i] <= 'F') {
				i++
			}
			toks = append(toks, pyTok{'v', src[start:i], line})
		case c == '<' && i+1 < len(src) && src[i+1] == '<', c == '*' && i+1 < len(src) && src[i+1] == '*':
			toks = append(toks, pyTok{'p', src[i : i+2], line})
			i += 2
		default:
			if c >= 0x80 { // a non-ASCII rune: part of no setting
				i++
				continue
			}
			toks = append(toks, pyTok{'p', string(c), line})
			i++
		}
	}
	return toks
}

// ParsePython finds kafka-python producer settings in Python source. Keys
// are returned in kafka-python's spelling (batch_size, linger_ms).
func ParsePython(data []byte) []Setting {
	toks := tokenizePython(string(data))
	var out []Setting
	for i := 0; i+2 < len(toks); i++ {
		t := toks[i]
		var key, quote string
		switch {
		case t.kind == 'n' && pythonKeys[t.text] && toks[i+1].text == "=" && (i == 0 || toks[i-1].text == "(" || toks[i-1].text == ","):
			key = t.text // keyword argument
		case t.kind == 's' && toks[i+1].text == ":":
			if k := stringLiteral(t.text); pythonKeys[k] {
				key = k // dict entry
				quote = strings.TrimLeft(t.text, "rRbBuU")[:1]
			}
		}
		if key == "" {
			continue
		}
		j := i + 2
		for j < len(toks) && !endsValue(toks[j]) {
			j++
		}
		expr := toks[i+2 : j]
		val, lit := evalPython(expr)
		out = append(out, Setting{Key: key, Value: val, Line: t.line, Literal: lit, DictQuote: quote})
		i = j - 1
	}
	return out
}

func stringLiteral(s string) string {
	s = strings.TrimLeft(s, "rRbBuU")
	for _, q := range []string{`"""`, `'''`, `"`, `'`} {
		if len(s) >= 2*len(q) && strings.HasPrefix(s, q) && strings.HasSuffix(s, q) {
			return s[len(q) : len(s)-len(q)]
		}
	}
	return ""
}

// evalPython evaluates integer arithmetic over literals, left to right with
// * and << binding tighter than + and -. Anything else is returned as text
// with lit false (a string literal is returned unquoted with lit true).
func evalPython(expr []pyTok) (string, bool) {
	var src strings.Builder
	for k, t := range expr {
		if k > 0 {
			src.WriteByte(' ')
		}
		src.WriteString(t.text)
	}
	if len(expr) == 1 {
		switch t := expr[0]; t.kind {
		case 's':
			return stringLiteral(t.text), true
		case 'n':
			if t.text == "True" || t.text == "False" || t.text == "None" {
				return t.text, true
			}
			return t.text, false
		}
	}
	// terms separated by + and -, factors by * and <<
	var sum, term float64
	sign := 1.0
	op := ""
	expectNum := true
	for _, t := range expr {
		if expectNum {
			if t.kind != 'v' {
				return src.String(), false
			}
			v, ok := pyNumber(t.text)
			if !ok {
				return src.String(), false
			}
			switch op {
			case "":
				term = v
			case "*":
				term *= v
			case "<<":
				if v < 0 || v > 62 {
					return src.String(), false
				}
				term *= float64(uint64(1) << uint(v))
			}
			expectNum = false
			continue
		}
		switch t.text {
		case "*", "<<":
			op = t.text
		case "+", "-":
			sum += sign * term
			sign, op = 1, ""
			if t.text == "-" {
				sign = -1
			}
		default:
			return src.String(), false
		}
		expectNum = true
	}
	if expectNum {
		return src.String(), false
	}
	sum += sign * term
	return strconv.FormatFloat(sum, 'f', -1, 64), true
}

func pyNumber(s string) (float64, bool) {
	s = strings.ReplaceAll(s, "_", "")
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		return float64(n), true
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// endsValue reports a token that ends an argument or dict value.
func endsValue(t pyTok) bool {
	return t.kind == 'p' && (t.text == "," || t.text == ")" || t.text == "}")
}
