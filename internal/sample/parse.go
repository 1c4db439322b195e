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
		p = p[eq+2:]
		var v strings.Builder
		closed := false
		for i := 0; i < len(p); i++ {
			c := p[i]
			if c == '"' {
				p = p[i+1:]
				closed = true
				break
			}
			if c == '\\' && i+1 < len(p) {
				i++
				switch p[i] {
				case 'n':
					v.WriteByte('\n')
				case '\\', '"':
					v.WriteByte(p[i])
				default:
					return nil, fmt.Errorf("bad escape \\%c", p[i])
				}
				continue
			}
			v.WriteByte(c)
		}
		if !closed {
			return nil, errors.New("unterminated label value")
		}
		ls = append(ls, Label{Name: name, Value: v.String()})
		if len(p) > 0 {
			if p[0] != ',' {
				return nil, errors.New("labels not separated by a comma")
			}
			p = p[1:]
		}
	}
	return ls, nil
}
