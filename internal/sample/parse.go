package sample

import (
	"errors"
	"fmt"
	"strings"
)

// ParseKey reads Metric.Key's output back: name{a="1",b="2"}, or the name
// alone.
func ParseKey(key string) (name string, ls Labels, err error) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key, nil, nil
	}
	ls, err = ParseLabels(key[i:])
	return key[:i], ls, err
}

// ParseLabels reads Labels.String's output back: {a="1",b="2"}, the values with
// \\, \" and \n escaped; "" is no labels. The labels keep their order.
func ParseLabels(s string) (Labels, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, errors.New("labels not in braces")
	}
	p := s[1 : len(s)-1]
	var ls Labels
	for len(p) > 0 {
		eq := strings.Index(p, `="`)
		if eq <= 0 {
			return nil, errors.New("label without =\"")
		}
		name := p[:eq]
		v, n, err := UnquoteValue(p[eq+1:])
		if err != nil {
			return nil, err
		}
		p = p[eq+1+n:]
		ls = append(ls, Label{Name: name, Value: v})
		if len(p) > 0 {
			if p[0] != ',' {
				return nil, errors.New("labels not separated by a comma")
			}
			p = p[1:]
		}
	}
	return ls, nil
}

// UnquoteValue reads a label value in double quotes at the start of s, with
// \\, \" and \n escaped as Labels.String writes them, and returns the value
// and the length of its quoted form in s.
func UnquoteValue(s string) (string, int, error) {
	if s == "" || s[0] != '"' {
		return "", 0, errors.New("label value not quoted")
	}
	var v strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return v.String(), i + 1, nil
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				v.WriteByte('\n')
			case '\\', '"':
				v.WriteByte(s[i])
			default:
				return "", 0, fmt.Errorf("bad escape \\%c", s[i])
			}
		case c == '\\':
			return "", 0, errors.New("unterminated label value") // a backslash at the end
		default:
			v.WriteByte(c)
		}
	}
	return "", 0, errors.New("unterminated label value")
}
