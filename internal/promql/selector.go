// Package promql builds the PromQL selectors memdoctor sends to
// Prometheus and writes into alerting rules, and reads durations the way
// PromQL writes them (with days and weeks).
package promql

import (
	"errors"
	"fmt"
	"strings"
)

// Matchers returns a selector's inner matchers, braces and spaces removed
// ("" when none): `{job="node"}` → `job="node"`.
func Matchers(m string) string {
	m = strings.TrimSpace(m)
	m = strings.TrimPrefix(m, "{")
	m = strings.TrimSuffix(m, "}")
	return strings.TrimSpace(m)
}

// Selector builds name{extra...,match}; empty extra matchers are left
// out, and with no matchers at all it is name alone.
func Selector(name, match string, extra ...string) string {
	var parts []string
	for _, e := range extra {
		if e != "" {
			parts = append(parts, e)
		}
	}
	if m := Matchers(match); m != "" {
		parts = append(parts, m)
	}
	if len(parts) == 0 {
		return name
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// ParseMatch checks a --match label selector as Prometheus reads one (see
// parseSelector) and returns it in canonical form,
// `{job="node",dc=~"ams.*"}` ("" for none). The braces may be left out
// (`job="node"`). A metric name is refused: memdoctor chooses the metrics
// and adds the selector to each.
func ParseMatch(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	ms, err := parseSelector(s)
	if err != nil && !strings.HasPrefix(s, "{") {
		ms2, err2 := parseSelector("{" + s + "}")
		switch {
		case err2 == nil:
			ms, err = ms2, nil
		case !strings.Contains(s, "{"):
			// Matchers without braces: the error is the one found in them,
			// at its place in what was given.
			var se *selectorError
			if errors.As(err2, &se) {
				se.pos = max(se.pos-1, 0)
			}
			err = err2
		}
	}
	if err != nil {
		return "", fmt.Errorf("not a label selector (%w); want e.g. '{job=\"node\",dc=\"ams\"}'", err)
	}
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		if m.Name == metricNameLabel {
			return "", errors.New("give labels only, without a metric name (memdoctor picks the metrics); e.g. '{job=\"node\"}'")
		}
		parts = append(parts, m.String())
	}
	if len(parts) == 0 {
		return "", nil
	}
	return "{" + strings.Join(parts, ",") + "}", nil
}
