package store

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// labelsText is the canonical text of a label set, as the series table
// holds it: sample.Labels.String() of the set sorted by name, "" for none.
func labelsText(ls sample.Labels) (string, error) {
	for _, l := range ls {
		if l.Name == "" || strings.ContainsAny(l.Name, "=\",{}\n\\") {
			return "", fmt.Errorf("label name %q: want a name without = \" , { } \\ or newline", l.Name)
		}
	}
	if !sort.SliceIsSorted(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name }) {
		ls = append(sample.Labels(nil), ls...)
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	}
	for i := 1; i < len(ls); i++ {
		if ls[i].Name == ls[i-1].Name {
			return "", fmt.Errorf("label %q twice", ls[i].Name)
		}
	}
	return ls.String(), nil
}

// checkName rejects metric names the series key cannot hold.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "{}\"\n") {
		return fmt.Errorf("metric name %q: want a non-empty name without { } \" or newline", name)
	}
	return nil
}

// parseLabels reads labelsText's output back.
func parseLabels(s string) (sample.Labels, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, errors.New("labels not in braces")
	}
	p := s[1 : len(s)-1]
	var ls sample.Labels
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
		ls = append(ls, sample.Label{Name: name, Value: v.String()})
		if len(p) > 0 {
			if p[0] != ',' {
				return nil, errors.New("labels not separated by a comma")
			}
			p = p[1:]
		}
	}
	return ls, nil
}
