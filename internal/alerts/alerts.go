// Package alerts writes Prometheus alerting rules for every memdoctor rule
// that PromQL can express, with the thresholds the rules themselves use,
// so that a fleet is watched between diagnoses.
package alerts

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
)

// Alert is one alerting rule.
type Alert struct {
	Name     string
	Rule     string // memdoctor rule it approximates
	Expr     string
	For      string
	Severity string
	// Summary may use {{ $labels.NAME }}.
	Summary string
	// Runbook is what to do when it fires ("": the default, see Runbook).
	Runbook string
}

// Baseline is one host's usual daily peak of memory use.
type Baseline struct {
	Instance string
	Bytes    float64
	Days     int
}

// Options shape the rules.
type Options struct {
	// Match is a label selector added to every series (may be empty).
	Match string
	// Baselines, when given, are static per-host baselines (from
	// --baseline-from) written as recording rules and used instead of the
	// 14-day subquery.
	Baselines []Baseline
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Alerts returns the alerting rules: every rule's that has some, in the
// order of the rules.
func Alerts(o Options) []Alert {
	ao := diagnose.AlertOptions{Match: o.Match, StaticBaselines: len(o.Baselines) > 0}
	var as []Alert
	for _, r := range diagnose.Rules() {
		m := r.Meta()
		if m.Alerts == nil {
			continue
		}
		for _, a := range m.Alerts(ao) {
			as = append(as, Alert{Name: a.Name, Rule: m.ID, Expr: a.Expr, For: a.For, Severity: a.Severity, Summary: a.Summary, Runbook: a.Runbook})
		}
	}
	return as
}

// YAML renders the rule file: the alerts, and the per-host baselines as
// recording rules when given.
func YAML(o Options) string {
	var b strings.Builder
	b.WriteString("# Prometheus alerting rules written by memdoctor alerts.\n")
	b.WriteString("# Thresholds are memdoctor's rules' own; an alert means: run memdoctor diagnose on the host.\n")
	b.WriteString("groups:\n")
	b.WriteString("  - name: memdoctor\n    rules:\n")
	if len(o.Baselines) > 0 {
		// In the alerts' group, first: rules of a group run in order, so
		// the alert always sees the baselines of the same evaluation.
		bs := append([]Baseline(nil), o.Baselines...)
		sort.Slice(bs, func(i, j int) bool { return bs[i].Instance < bs[j].Instance })
		for _, x := range bs {
			fmt.Fprintf(&b, "      - record: %s\n        expr: vector(%s)\n        labels:\n          instance: %s\n          memdoctor_baseline_days: %q\n",
				diagnose.BaselineRecord, num(x.Bytes), quote(x.Instance), strconv.Itoa(x.Days))
		}
	}
	for _, a := range Alerts(o) {
		fmt.Fprintf(&b, "      - alert: %s\n        expr: |\n", a.Name)
		for _, l := range strings.Split(a.Expr, "\n") {
			fmt.Fprintf(&b, "          %s\n", l)
		}
		fmt.Fprintf(&b, "        for: %s\n        labels:\n          severity: %s\n          memdoctor_rule: %s\n", a.For, a.Severity, a.Rule)
		fmt.Fprintf(&b, "        annotations:\n          summary: %s\n          runbook: %s\n", quote(a.Summary), quote(Runbook(a)))
	}
	return b.String()
}

// Runbook is the command the alert's runbook annotation gives.
func Runbook(a Alert) string {
	if a.Runbook != "" {
		return a.Runbook
	}
	return "memdoctor diagnose --prometheus URL --match '{instance=\"" + instanceLabel + "\"}'   # see the " + a.Rule + " finding"
}

// instanceLabel is the firing series' instance label as Prometheus'
// template engine writes it into the runbook's command, inside PromQL's
// double quotes inside the shell's single quotes: a label that cannot be
// printed (control, format or line-separator characters, bytes that are
// not UTF-8) becomes model.Unprintable, then \ and " are escaped for PromQL
// and ' closes the shell's quotes, is escaped and reopens them. The label
// is written by whoever the targets' discovery lets name an instance.
const instanceLabel = `{{ $labels.instance` +
	` | reReplaceAll "(?s)^.*[\\x00-\\x1f\\x7f-\\x{9f}\\p{Cf}\\x{2028}\\x{2029}\\x{fffd}].*$" "` + model.Unprintable + `"` +
	` | reReplaceAll "([\\\\\"])" "\\$1"` +
	` | reReplaceAll "'" "'\\''" }}`

// quote writes a YAML double-quoted string.
func quote(s string) string { return strconv.Quote(s) }
