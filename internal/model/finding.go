package model

import (
	"github.com/memdoctor/memdoctor/internal/format"
	"slices"
	"sort"
)

// Severity of a finding.
type Severity string

// Severities, least to most urgent.
const (
	Info     Severity = "info"
	Warning  Severity = "warning"
	Critical Severity = "critical"
)

// Rank orders severities (critical highest).
func (s Severity) Rank() int {
	switch s {
	case Critical:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// Evidence is one number that proves a finding.
type Evidence struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is bytes, pages, percent, count, per_day, seconds, ratio or "".
	Unit string `json:"unit,omitempty"`
	// Text is a non-numeric value (a kernel release, a cache name).
	Text string `json:"text,omitempty"`
}

// Human writes the value for people, in its unit (text evidence is its
// text): what the text and HTML reports show.
func (e Evidence) Human() string {
	if e.Text != "" {
		return e.Text
	}
	return format.Value(e.Value, e.Unit)
}

// Remedy is one exact thing to do.
type Remedy struct {
	Title string `json:"title"`
	// Commands are exact shell commands, in order.
	Commands []string `json:"commands,omitempty"`
	// Code is source to put in the program (Language names its language),
	// not a shell command: reports show it apart, without a prompt.
	Code     []string `json:"code,omitempty"`
	Language string   `json:"language,omitempty"`
	// Risk says what can go wrong and what it costs.
	Risk string `json:"risk"`
	// Undo says how to revert.
	Undo string `json:"undo,omitempty"`
}

// Finding is one diagnosed mechanism.
type Finding struct {
	ID       string     `json:"id"`
	Severity Severity   `json:"severity"`
	Subject  string     `json:"subject"`
	Summary  string     `json:"summary"`
	Evidence []Evidence `json:"evidence"`
	Remedies []Remedy   `json:"remedies"`
}

// Coverage says how much of the diagnosis was done: which rules were
// evaluated, which could not be and why, and whether the data itself is a
// partial view (something could not be read). A report that finds nothing
// means "ok" only as far as its coverage goes.
type Coverage struct {
	// Rules is how many rules memdoctor has.
	Rules int `json:"rules"`
	// Evaluated lists the rules that judged the data.
	Evaluated []string `json:"evaluated"`
	// NotEvaluated lists the rules that could not judge, each with why.
	NotEvaluated []RuleSkip `json:"not_evaluated"`
	// Partial is true when some of the host's data could not be read
	// (permissions, a missing kernel interface, a malformed file).
	Partial bool `json:"partial"`
	// Unread lists what could not be read, one line each.
	Unread []string `json:"unread,omitempty"`
}

// RuleSkip is one rule that was not evaluated.
type RuleSkip struct {
	ID string `json:"id"`
	// Reason is "needs a time range", "missing data", "too little data" or
	// "impossible data" (a value that cannot be: MemTotal 0, a negative size).
	Reason string `json:"reason"`
	// Detail says what exactly was missing.
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Reasons a rule was not evaluated.
const (
	SkipNeedsRange  = "needs a time range"
	SkipMissingData = "missing data"
	SkipTooLittle   = "too little data"
	SkipInvalidData = "impossible data"
)

// MergeCoverage combines the coverage of several instances' reports: a
// rule counts as evaluated only if it was on every instance; a rule not
// evaluated somewhere is listed once, naming the instance, and unread data
// names its instance too.
func MergeCoverage(names []string, cs []Coverage) Coverage {
	var m CoverageMerger
	for i, c := range cs {
		m.Add(names[i], c)
	}
	return m.Coverage()
}

// CoverageMerger combines coverages one instance at a time, as
// MergeCoverage does, holding only the merged lists (not every instance's
// coverage). The zero value is ready to use.
type CoverageMerger struct {
	out       Coverage
	skipped   map[string]bool
	evaluated []string
	seen      map[string]bool
}

// Add merges the coverage of instance name.
func (m *CoverageMerger) Add(name string, c Coverage) {
	if m.skipped == nil {
		m.skipped, m.seen = map[string]bool{}, map[string]bool{}
	}
	m.out.Rules = max(m.out.Rules, c.Rules)
	m.out.Partial = m.out.Partial || c.Partial
	ref := InstanceRef(name)
	for _, u := range c.Unread {
		m.out.Unread = append(m.out.Unread, ref+": "+u)
	}
	for _, s := range c.NotEvaluated {
		if !m.skipped[s.ID] {
			m.skipped[s.ID] = true
			s.Detail = ref + ": " + s.Detail
			m.out.NotEvaluated = append(m.out.NotEvaluated, s)
		}
	}
	for _, id := range c.Evaluated {
		if !m.seen[id] {
			m.seen[id] = true
			m.evaluated = append(m.evaluated, id)
		}
	}
}

// Coverage is the merge of what was added: the rules evaluated on some
// instance and skipped on none, in the order they were first seen.
func (m *CoverageMerger) Coverage() Coverage {
	out := m.out
	out.Evaluated = []string{}
	for _, id := range m.evaluated {
		if !m.skipped[id] {
			out.Evaluated = append(out.Evaluated, id)
		}
	}
	out.NotEvaluated = append([]RuleSkip{}, m.out.NotEvaluated...)
	out.Unread = slices.Clone(m.out.Unread)
	return out
}

// SortFindings orders findings most severe first, then by id.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if a, b := fs[i].Severity.Rank(), fs[j].Severity.Rank(); a != b {
			return a > b
		}
		return fs[i].ID < fs[j].ID
	})
}
