package malloc

// gdb/MI output records (gdb manual, "GDB/MI Output Syntax"), one per line:
//
//	123^done,value="(void *) 0x7f4532000000"        result record of command 123
//	123^error,msg="ptrace: Operation not permitted."
//	*stopped,reason="signal-received",signal-name="SIGINT",thread-id="1"
//	=thread-group-exited,id="i1"                     notify record
//	~"[New LWP 16444]\n"                             console stream
//	(gdb)                                            prompt
//
// After the class come results: name=value, where a value is a C string,
// a tuple {name=value,...} or a list [value,...] / [name=value,...].

import (
	"strconv"
	"strings"
)

// miRecord is one parsed output line.
type miRecord struct {
	token int    // -1 when absent
	kind  byte   // '^' result, '*' exec async, '=' notify, '~' '&' '@' streams, '(' prompt
	class string // done, error, stopped, thread-group-exited...
	// results of a result or async record; text of a stream record.
	results map[string]any
	text    string
}

// parseMI parses one line. ok is false for lines that are not MI (gdb
// and the target may write to the terminal directly).
func parseMI(line string) (rec miRecord, ok bool) {
	line = strings.TrimRight(line, "\r\n")
	rec.token = -1
	if strings.HasPrefix(line, "(gdb)") {
		rec.kind = '('
		return rec, true
	}
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i > 0 {
		t, err := strconv.Atoi(line[:i])
		if err != nil {
			return rec, false
		}
		rec.token = t
	}
	if i >= len(line) {
		return rec, false
	}
	rec.kind = line[i]
	rest := line[i+1:]
	switch rec.kind {
	case '~', '&', '@':
		p := miParser{s: rest}
		s, ok := p.cstring()
		if !ok {
			return rec, false
		}
		rec.text = s
		return rec, true
	case '^', '*', '+', '=':
		class, after, _ := strings.Cut(rest, ",")
		rec.class = class
		rec.results = map[string]any{}
		if after != "" {
			p := miParser{s: after}
			if !p.results(rec.results, 0) {
				return rec, false
			}
		}
		return rec, true
	}
	return rec, false
}

// miParser is a recursive-descent parser over one line.
type miParser struct {
	s string
	i int
}

// maxDepth bounds nesting: MI output is a few levels deep.
const maxDepth = 32

func (p *miParser) results(into map[string]any, depth int) bool {
	for {
		name, v, ok := p.result(depth)
		if !ok {
			return false
		}
		into[name] = v
		if p.i >= len(p.s) || p.s[p.i] != ',' {
			return p.i == len(p.s) || p.s[p.i] == '}' || p.s[p.i] == ']'
		}
		p.i++
	}
}

func (p *miParser) result(depth int) (string, any, bool) {
	eq := strings.IndexByte(p.s[p.i:], '=')
	if eq <= 0 {
		return "", nil, false
	}
	name := p.s[p.i : p.i+eq]
	p.i += eq + 1
	v, ok := p.value(depth)
	return name, v, ok
}

func (p *miParser) value(depth int) (any, bool) {
	if p.i >= len(p.s) || depth > maxDepth {
		return nil, false
	}
	switch p.s[p.i] {
	case '"':
		return p.cstring()
	case '{':
		p.i++
		m := map[string]any{}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, true
		}
		if !p.results(m, depth+1) || p.i >= len(p.s) || p.s[p.i] != '}' {
			return nil, false
		}
		p.i++
		return m, true
	case '[':
		p.i++
		var l []any
		for p.i < len(p.s) && p.s[p.i] != ']' {
			var v any
			var ok bool
			if c := p.s[p.i]; c == '"' || c == '{' || c == '[' {
				v, ok = p.value(depth + 1)
			} else {
				var name string
				name, v, ok = p.result(depth + 1)
				v = map[string]any{name: v}
			}
			if !ok {
				return nil, false
			}
			l = append(l, v)
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
			}
		}
		if p.i >= len(p.s) {
			return nil, false
		}
		p.i++
		return l, true
	}
	return nil, false
}

// cstring reads a C string with gdb's escapes (\n \t \" \\ and octal).
func (p *miParser) cstring() (string, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", false
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), true
		case '\\':
			if p.i >= len(p.s) {
				return "", false
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'e':
				b.WriteByte(0x1b)
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte(8)
			case 'f':
				b.WriteByte(12)
			case 'v':
				b.WriteByte(11)
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := int(e - '0')
				for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; k++ {
					v = v*8 + int(p.s[p.i]-'0')
					p.i++
				}
				b.WriteByte(byte(v))
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// str returns a string result, or "".
func (r miRecord) str(name string) string {
	s, _ := r.results[name].(string)
	return s
}

// miQuote quotes a string as an MI C-string argument.
func miQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// miNumber reads the number at the end of an evaluated value:
// "(void *) 0x7f4532000000", "0", "-1", "0x0".
func miNumber(v string) (uint64, bool) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, false
	}
	s := f[len(f)-1]
	if strings.HasPrefix(s, "0x") {
		n, err := strconv.ParseUint(s[2:], 16, 64)
		return n, err == nil
	}
	if strings.HasPrefix(s, "-") {
		n, err := strconv.ParseInt(s, 10, 64)
		return uint64(n), err == nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
