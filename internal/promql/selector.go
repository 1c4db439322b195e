// Package promql builds the PromQL selectors memdoctor sends to
// Prometheus and writes into alerting rules.
package promql

import "strings"

// Matchers returns a selector's inner matchers, braces and spaces removed
// ("" when none): `{job="node"}` → `job="node"`.
func Matchers(m string) string {
	m = strings.TrimSpace(m)
	m = strings.TrimPrefix(m, "{")
	m = strings.TrimSuffix(m, "}")
	return strings.TrimSpace(m)
}

// Selector builds name{extra...,match}; with no matchers at all, name
// alone.
func Selector(name, match string, extra ...string) string {
	parts := append([]string(nil), extra...)
	if m := Matchers(match); m != "" {
		parts = append(parts, m)
	}
	if len(parts) == 0 {
		return name
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}
