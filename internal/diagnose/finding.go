// Package diagnose turns samples into an explanation: findings from rules
// over the host model (internal/model builds it), one rule per file, each
// file a leaf. It never reads /proc: every rule runs on replayed data, a
// capture, a recording or a Prometheus query alike.
package diagnose

import (
	"slices"
	"strings"
	"sync"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Meta describes a rule.
type Meta struct {
	ID    string
	Title string
	// Doc is one line for the README's rule table: what the rule finds
	// and what it adds (Markdown).
	Doc string
	// Needs lists the series the rule cannot work without, and how to get
	// each when it is missing.
	Needs []Need
	// Reads lists the series names a trend rule reads from a window beyond
	// Needs (a source loads only what some rule reads).
	Reads []string
	// StepMin and StepMax list the series (of Needs or Reads) whose step
	// minima and maxima the rule reads when the window is downsampled:
	// a source keeps those aggregates for these series only.
	StepMin, StepMax []string
	// EndsOnly lists the series (of Reads) the rule reads only at the ends
	// of a segment (the first and last point within it, as within gives
	// them) and for their last value: a source may keep just those points
	// (ThinToEnds) when no other rule reads more of them.
	EndsOnly []string
	// Trend marks a rule that judges a time range only: it is not
	// evaluated on a single snapshot (check), and the report says so.
	Trend bool
	// Charts are the kinds of chart (Chart*) that prove the rule's
	// findings in the HTML report, most telling first.
	Charts []string
	// Prefilter is how a fleet scan tells the instances that come near
	// the rule.
	Prefilter *Prefilter
	// Alerts, when set, are the Prometheus alerting rules approximating
	// the rule (with its own thresholds).
	Alerts func(o AlertOptions) []Alert
}

// Need is one required series.
type Need struct {
	Series string
	HowTo  string
}

// advisor is a rule that tailors the HowTo of a missing series to the data
// at hand (e.g. not to advise a process what it already does).
type advisor interface {
	Advise(in *Input, howTo string) string
}

// Input is what a rule sees: the host model of the latest instant (nil
// when the source has no instant data) and, for recordings and ingested
// history, every series over the time range (nil for a single snapshot).
type Input struct {
	Host   *model.Host
	Window *sample.Window
	notes  []sample.Note
}

// Note records that a rule could not judge (too little data, a series
// missing in part of the window): a note, never a guess.
func (in *Input) Note(rule, message, fix string) {
	in.notes = append(in.notes, sample.Note{Source: "rule " + rule, Message: message, Fix: fix})
}

// Rule detects one mechanism.
type Rule interface {
	Meta() Meta
	Eval(in *Input) []model.Finding
}

// registry holds every rule; rules register from init in their own file.
var registry []Rule

func register(r Rule) { registry = append(registry, r) }

// Rules returns every registered rule.
func Rules() []Rule { return append([]Rule(nil), registry...) }

// missingNotes note rules not evaluated for want of a series. Rules that
// lack their data for the same reason (the same fix) share one note, so a
// host without, say, language runtimes gets one line about it, not one per
// GC rule. Each note's text is made once, at the end.
type missingNotes []missingNote

// missingNote is one shared note: the rules, the series they miss and what
// they would have judged.
type missingNote struct {
	how    string
	ids    []string
	series []string
	titles []string
}

// add notes rule m not evaluated for want of series, to get as how says.
func (ns *missingNotes) add(m *Meta, series, how string) {
	for i := range *ns {
		n := &(*ns)[i]
		if n.how == how {
			n.ids = append(n.ids, m.ID)
			if !n.mentions(series) {
				n.series = append(n.series, series)
			}
			n.titles = append(n.titles, m.Title)
			return
		}
	}
	// The three lists of one from one array, each capped at its one
	// element (a second is appended to a copy): a note is made for each
	// of a dozen rules on each of 100,000 instances of a fleet's file.
	one := []string{m.ID, series, m.Title}
	*ns = append(*ns, missingNote{how: how, ids: one[0:1:1], series: one[1:2:2], titles: one[2:3:3]})
}

// mentions reports whether the note's message holds series: as one of its
// series or within one of its words (strings.Contains of the message,
// without making it for a name of no space or comma).
func (n *missingNote) mentions(series string) bool {
	if strings.ContainsAny(series, " ,") {
		return strings.Contains(n.message(), series)
	}
	words := "not evaluated: series is missing"
	if len(n.series) > 1 {
		words = "not evaluated: series are missing"
	}
	if strings.Contains(words, series) {
		return true
	}
	for _, s := range n.series {
		if strings.Contains(s, series) {
			return true
		}
	}
	return false
}

// message is the note's message: "not evaluated: series X is missing", or
// "not evaluated: series X, Y are missing".
func (n *missingNote) message() string {
	if len(n.series) == 1 {
		return "not evaluated: series " + n.series[0] + " is missing"
	}
	return "not evaluated: series " + strings.Join(n.series, ", ") + " are missing"
}

// notes are the notes, in the order their first rule was met.
func (ns missingNotes) notes() []sample.Note {
	if len(ns) == 0 {
		return nil
	}
	out := make([]sample.Note, 0, len(ns))
	for i := range ns {
		n := &ns[i]
		src := "rule " + n.ids[0]
		if len(n.ids) > 1 {
			src = "rules " + strings.Join(n.ids, ", ")
		}
		out = append(out, sample.Note{Source: src, Message: n.message(), Hides: strings.Join(n.titles, "; "), Fix: n.how})
	}
	return out
}

// ruleSet is rules with what evaluate makes of their Meta once, not for
// every diagnosis: the Meta, each need's "series X is missing" and its
// HowTo fitted to each kind of data, and the notes of rules not evaluated
// for want of a series, kept for each set of missing series met (the same
// on every instance of a fleet's file).
type ruleSet struct {
	rules []Rule
	metas []Meta
	// detail[i][j] is the coverage detail of rule i missing need j;
	// fitted[i][j][k] its HowTo fitted to the kind of data k (fitKind).
	detail [][]string
	fitted [][][3]string
	memo   missingMemo
}

func newRuleSet(rules []Rule) *ruleSet {
	rs := &ruleSet{rules: rules, metas: make([]Meta, len(rules)), detail: make([][]string, len(rules)), fitted: make([][][3]string, len(rules))}
	for i, r := range rules {
		m := r.Meta()
		rs.metas[i] = m
		rs.detail[i] = make([]string, len(m.Needs))
		rs.fitted[i] = make([][3]string, len(m.Needs))
		for j, n := range m.Needs {
			rs.detail[i][j] = "series " + n.Series + " is missing"
			for k := range rs.fitted[i][j] {
				rs.fitted[i][j][k] = fitHowToKind(n.HowTo, k)
			}
		}
	}
	return rs
}

// registrySet is the registered rules' set, made once (rules register at
// init).
var registrySet = sync.OnceValue(func() *ruleSet { return newRuleSet(registry) })

// missed is one rule not evaluated for want of a series: rule i's need j,
// to get as how says.
type missed struct {
	rule, need int
	how        string
}

// missingMemo keeps the notes (missingNotes.notes) of each list of missed
// rules met, up to maxMissingMemo lists: 100,000 instances of a fleet's
// file miss the same series, and making their notes each time was a
// quarter of the rules' time.
type missingMemo struct {
	mu   sync.Mutex
	byID map[uint64][]missingEntry
	n    int
}

type missingEntry struct {
	key   []missed
	notes []sample.Note
}

// missedScratch holds the lists evaluate makes of missed rules, reused
// from one diagnosis to the next (the memo keeps copies).
var missedScratch = sync.Pool{New: func() any { return new([]missed) }}

// maxMissingMemo bounds the lists of missed rules kept: a source whose
// instances all miss different series makes the notes of the rest anew.
const maxMissingMemo = 256

// missingHash mixes the rules, needs and lengths of the HowTos of key (FNV-1a):
// equal lists hash equal, and the entries of a hash are compared whole.
func missingHash(key []missed) uint64 {
	h := uint64(14695981039346656037)
	for _, k := range key {
		for _, v := range [3]int{k.rule, k.need, len(k.how)} {
			h = (h ^ uint64(v)) * 1099511628211
		}
	}
	return h
}

// notes are the notes of the rules key lists as missing their series, made
// once for each such list. The slice is shared: its length is its
// capacity, so an append copies it.
func (mm *missingMemo) notes(rs *ruleSet, key []missed) []sample.Note {
	if len(key) == 0 {
		return nil
	}
	mm.mu.Lock()
	if mm.byID == nil {
		mm.byID = map[uint64][]missingEntry{}
	}
	id := missingHash(key)
	for _, e := range mm.byID[id] {
		if slices.Equal(e.key, key) {
			mm.mu.Unlock()
			return e.notes
		}
	}
	mm.mu.Unlock()
	notes := makeMissingNotes(rs, key)
	mm.mu.Lock()
	if mm.n < maxMissingMemo {
		mm.byID[id] = append(mm.byID[id], missingEntry{key: slices.Clone(key), notes: notes})
		mm.n++
	}
	mm.mu.Unlock()
	return notes
}

// makeMissingNotes makes the notes of the rules key lists as missing
// their series (the unmemoised way).
func makeMissingNotes(rs *ruleSet, key []missed) []sample.Note {
	var skipped missingNotes
	for _, k := range key {
		skipped.add(&rs.metas[k.rule], rs.metas[k.rule].Needs[k.need].Series, k.how)
	}
	return slices.Clip(skipped.notes())
}

// evaluate runs the rules. A rule whose needed series are missing is
// skipped with a note saying what is missing and how to get it; the
// coverage says which rules were evaluated and which were not (a trend
// rule on a snapshot, a rule without its series, a rule that noted it had
// too little data to judge).
func evaluate(in *Input, rs *ruleSet) ([]model.Finding, []sample.Note, model.Coverage) {
	var out []model.Finding
	scratch := missedScratch.Get().(*[]missed)
	defer missedScratch.Put(scratch)
	missing := (*scratch)[:0]
	kind := fitKind(in)
	cov := model.Coverage{Rules: len(rs.rules), Evaluated: []string{}, NotEvaluated: make([]model.RuleSkip, 0, len(rs.rules))}
	for i, r := range rs.rules {
		m := &rs.metas[i]
		if m.Trend && in.Window == nil {
			cov.NotEvaluated = append(cov.NotEvaluated, model.RuleSkip{ID: m.ID, Reason: model.SkipNeedsRange,
				Detail: m.Title + " is judged over time", Fix: "memdoctor record, then memdoctor diagnose"})
			continue
		}
		need := -1
		for j, n := range m.Needs {
			if !in.has(n.Series) {
				need = j
				break
			}
		}
		if need >= 0 {
			how := rs.fitted[i][need][kind]
			if a, ok := r.(advisor); ok {
				if h, advised := m.Needs[need].HowTo, a.Advise(in, m.Needs[need].HowTo); advised != h {
					how = fitHowTo(advised, in)
				}
			}
			missing = append(missing, missed{rule: i, need: need, how: how})
			cov.NotEvaluated = append(cov.NotEvaluated, model.RuleSkip{ID: m.ID, Reason: model.SkipMissingData,
				Detail: rs.detail[i][need], Fix: how})
			continue
		}
		before := len(in.notes)
		found := r.Eval(in)
		for i := range found {
			model.ExplainUnprintable(found[i].Remedies)
		}
		out = append(out, found...)
		if len(found) == 0 && len(in.notes) > before && in.notes[len(in.notes)-1].Source == "rule "+m.ID {
			n := in.notes[len(in.notes)-1]
			reason := model.SkipTooLittle
			switch {
			case strings.HasPrefix(n.Message, notEvaluatedMissing):
				reason = model.SkipMissingData
			case strings.HasPrefix(n.Message, notEvaluatedInvalid):
				reason = model.SkipInvalidData
			}
			cov.NotEvaluated = append(cov.NotEvaluated, model.RuleSkip{ID: m.ID, Reason: reason, Detail: n.Message, Fix: n.Fix})
			continue
		}
		cov.Evaluated = append(cov.Evaluated, m.ID)
	}
	notes := append(rs.memo.notes(rs, missing), mergeInvalid(in.notes)...)
	clear(missing) // not to hold the HowTos
	*scratch = missing[:0]
	in.notes = nil
	model.SortFindings(out)
	return out, notes, cov
}

// mergeInvalid gives rules not evaluated for the same impossible value
// one note ("rules a, b: not evaluated: impossible data: ..."), as
// missingNotes do for a missing series.
func mergeInvalid(notes []sample.Note) []sample.Note {
	var out []sample.Note
	at := map[string]int{}
	for _, n := range notes {
		if !strings.HasPrefix(n.Message, notEvaluatedInvalid) || !strings.HasPrefix(n.Source, "rule ") {
			out = append(out, n)
			continue
		}
		if i, ok := at[n.Message]; ok {
			out[i].Source = strings.Replace(out[i].Source, "rule ", "rules ", 1) + ", " + strings.TrimPrefix(n.Source, "rule ")
			continue
		}
		at[n.Message] = len(out)
		out = append(out, n)
	}
	return out
}

func (in *Input) has(name string) bool {
	if in.Host != nil && in.Host.S.Has(name) {
		return true
	}
	return in.Window != nil && in.Window.Has(name)
}

// WindowSeries lists every series name the rules need or read, for a source
// to load.
func WindowSeries(rules []Rule) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rules {
		m := r.Meta()
		names := append([]string(nil), m.Reads...)
		for _, n := range m.Needs {
			names = append(names, n.Series)
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// WindowAggregates is, per series name of WindowSeries, the step
// aggregates some rule reads (a name absent reads Points only): for
// store.Query.Keep. No rule reads the step means.
func WindowAggregates(rules []Rule) map[string]sample.Aggregates {
	out := map[string]sample.Aggregates{}
	for _, r := range rules {
		m := r.Meta()
		for _, n := range m.StepMin {
			out[n] |= sample.KeepMin
		}
		for _, n := range m.StepMax {
			out[n] |= sample.KeepMax
		}
	}
	return out
}

// WindowEndsOnly lists the series names of WindowSeries that every rule
// loading them reads only at the ends of segments (Meta.EndsOnly).
func WindowEndsOnly(rules []Rule) []string {
	ends, more := map[string]bool{}, map[string]bool{}
	for _, r := range rules {
		m := r.Meta()
		loads := append([]string(nil), m.Reads...)
		for _, n := range m.Needs {
			loads = append(loads, n.Series)
		}
		for _, n := range loads {
			if slices.Contains(m.EndsOnly, n) {
				ends[n] = true
			} else {
				more[n] = true
			}
		}
	}
	var out []string
	for _, n := range WindowSeries(rules) {
		if ends[n] && !more[n] {
			out = append(out, n)
		}
	}
	return out
}
