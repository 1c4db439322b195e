package main

// Goldens keyed per rule. What an output says about the set of rules (how
// many there are, which were evaluated, the notes of the rules that were
// not, the alerting rules, the fleet scan's per-rule signals) would change
// every golden file whenever a rule is added. So matchGolden splits an
// output in two before comparing:
//
//   - the body, testdata/golden/<name>, where each such part is a
//     placeholder (RULES, EVALUATED, RULE NOTES, ...) and everything else
//     is kept byte for byte;
//   - each rule's own part, testdata/golden/rules/<id>.txt, one section
//     per output: its coverage entry, its note as it would read alone, its
//     alerting rules, its fleet-scan signal. A rule with nothing to say on
//     an output has no section there.
//
// The placeholders are checked against the registry (diagnose.Rules),
// independently of the output: the total is the number of registered
// rules, every listed id is a registered rule, listed in registry order,
// the counts add up to the total, a note shared by several rules is
// exactly the merge of their own notes (their series in the order of their
// Meta.Needs, their titles as hides), and alerts come only from rules with
// Meta.Alerts. So a rule that does not fire on a case changes no golden
// file of that case: only its own rules/<id>.txt.

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
)

// ruleRegistry is what the registry says about the rules, the reference
// the rule-dependent parts of an output are checked against.
type ruleRegistry struct {
	ids   []string
	index map[string]int
	meta  map[string]diagnose.Meta
}

func loadRuleRegistry() ruleRegistry {
	r := ruleRegistry{index: map[string]int{}, meta: map[string]diagnose.Meta{}}
	for _, rule := range diagnose.Rules() {
		m := rule.Meta()
		r.index[m.ID] = len(r.ids)
		r.ids = append(r.ids, m.ID)
		r.meta[m.ID] = m
	}
	return r
}

// keyedOutput is an output split into its body and each rule's part.
type keyedOutput struct {
	reg   ruleRegistry
	name  string
	body  []string
	rules map[string][]string
	errs  []string
}

func (k *keyedOutput) errf(format string, a ...any) {
	k.errs = append(k.errs, fmt.Sprintf(format, a...))
}

func (k *keyedOutput) add(id, rec string) { k.rules[id] = append(k.rules[id], rec) }

// ids parses "a, b, c" into registered rule ids (nil when one is not).
func (k *keyedOutput) ids(list string) []string {
	ids := strings.Split(list, ", ")
	for _, id := range ids {
		if _, ok := k.reg.index[id]; !ok {
			return nil
		}
	}
	return ids
}

// inOrder checks that ids are distinct and in registry order.
func (k *keyedOutput) inOrder(where string, ids []string) {
	for i := 1; i < len(ids); i++ {
		if k.reg.index[ids[i-1]] >= k.reg.index[ids[i]] {
			k.errf("%s: rules %s, %s are not in registry order", where, ids[i-1], ids[i])
		}
	}
}

func (k *keyedOutput) checkTotal(where string, n int) {
	if n != len(k.reg.ids) {
		k.errf("%s: %d rules, the registry has %d", where, n, len(k.reg.ids))
	}
}

// splitByRule splits an output into its body and each rule's part, and
// checks the parts that depend on the set of rules against the registry.
func splitByRule(reg ruleRegistry, name, out string) *keyedOutput {
	k := &keyedOutput{reg: reg, name: name, rules: map[string][]string{}}
	lines := strings.Split(out, "\n")
	switch {
	case strings.HasSuffix(name, ".json"):
		k.splitJSON(lines)
	case strings.HasSuffix(name, ".yml"):
		k.splitAlerts(lines)
	default:
		k.splitText(lines, strings.HasSuffix(name, ".html"))
	}
	return k
}

var (
	coverageLineRE = regexp.MustCompile(`^rules: (\d+) of (\d+) evaluated(; not evaluated:)?$`)
	coverageListRE = regexp.MustCompile(`^  - (\d+) ([^:]+): ([a-z0-9_]+(?:, [a-z0-9_]+)*) (\(.*\))$`)
	noFindingsRE   = regexp.MustCompile(`^(  .*no problems found by )(?:the (\d+) of (\d+) rules evaluated \((\d+) not evaluated, see above\)|(\d+) rules)(.*)$`)
	textNoteRE     = regexp.MustCompile(`^(  - (?:[^ ]+: )?)rules? ([a-z0-9_]+(?:, [a-z0-9_]+)*): (.*)$`)
	htmlCoverageRE = regexp.MustCompile(`^<p class="coverage muted" data-evaluated="(\d+)" data-rules="(\d+)">Rules evaluated: (\d+) of (\d+)(?:; not evaluated: (.*))?\.</p>$`)
	htmlSkipRE     = regexp.MustCompile(`^([a-z0-9_]+) \(([^)]*)\)$`)
	htmlNoteRE     = regexp.MustCompile(`^(<li><b>(?:[^<]*: )?)rules? ([a-z0-9_]+(?:, [a-z0-9_]+)*)(</b>: .*)$`)
)

// splitText handles the text outputs and the HTML report.
func (k *keyedOutput) splitText(lines []string, isHTML bool) {
	evaluated, total := -1, -1
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := coverageLineRE.FindStringSubmatch(l); m != nil && !isHTML {
			evaluated, _ = strconv.Atoi(m[1])
			total, _ = strconv.Atoi(m[2])
			k.checkTotal("coverage line", total)
			k.body = append(k.body, "rules: EVALUATED of RULES evaluated"+m[3])
			sum := evaluated
			for i+1 < len(lines) {
				s := coverageListRE.FindStringSubmatch(lines[i+1])
				if s == nil {
					break
				}
				ids := k.ids(s[3])
				if ids == nil {
					break
				}
				i++
				if n, _ := strconv.Atoi(s[1]); n != len(ids) {
					k.errf("coverage: %s says %s rules and lists %d", s[2], s[1], len(ids))
				}
				k.inOrder("coverage: "+s[2], ids)
				sum += len(ids)
				for _, id := range ids {
					k.add(id, "coverage: "+s[2]+" "+s[4])
				}
				k.body = append(k.body, "  - N "+s[2]+": RULES "+s[4])
			}
			if sum != total {
				k.errf("coverage: %d evaluated and %d listed as not evaluated, of %d rules", evaluated, sum-evaluated, total)
			}
			continue
		}
		if m := noFindingsRE.FindStringSubmatch(l); m != nil && !isHTML {
			if m[5] != "" {
				n, _ := strconv.Atoi(m[5])
				k.checkTotal("no findings", n)
				k.body = append(k.body, m[1]+"RULES rules"+m[6])
				continue
			}
			e, _ := strconv.Atoi(m[2])
			n, _ := strconv.Atoi(m[3])
			skipped, _ := strconv.Atoi(m[4])
			k.checkTotal("no findings", n)
			if (evaluated >= 0 && e != evaluated) || skipped != n-e {
				k.errf("no findings: %d of %d evaluated, %d not, against the coverage line's %d of %d", e, n, skipped, evaluated, total)
			}
			k.body = append(k.body, m[1]+"the EVALUATED of RULES rules evaluated (NOT EVALUATED not evaluated, see above)"+m[6])
			continue
		}
		if m := htmlCoverageRE.FindStringSubmatch(l); m != nil && isHTML {
			e, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			k.checkTotal("coverage", n)
			if m[3] != m[1] || m[4] != m[2] {
				k.errf("coverage: data says %s of %s, the text %s of %s", m[1], m[2], m[3], m[4])
			}
			var ids []string
			if m[5] != "" {
				for _, item := range strings.Split(m[5], ", ") {
					s := htmlSkipRE.FindStringSubmatch(item)
					if s == nil || k.ids(s[1]) == nil {
						k.errf("coverage: %q is not a registered rule and its reason", item)
						continue
					}
					ids = append(ids, s[1])
					k.add(s[1], "coverage: not evaluated ("+s[2]+")")
				}
			}
			k.inOrder("coverage", ids)
			if e+len(ids) != n {
				k.errf("coverage: %d evaluated and %d not evaluated, of %d rules", e, len(ids), n)
			}
			tail := ""
			if m[5] != "" {
				tail = "; not evaluated: RULES"
			}
			k.body = append(k.body, `<p class="coverage muted" data-evaluated="EVALUATED" data-rules="RULES">Rules evaluated: EVALUATED of RULES`+tail+`.</p>`)
			continue
		}
		re := textNoteRE
		if isHTML {
			re = htmlNoteRE
		}
		if m := re.FindStringSubmatch(l); m != nil && k.ids(m[2]) != nil {
			// A run of rule notes: each kept by its rules, one placeholder.
			var order noteOrder
			for ; i < len(lines); i++ {
				m := re.FindStringSubmatch(lines[i])
				if m == nil || k.ids(m[2]) == nil {
					break
				}
				order.next(k, m[1], k.ids(m[2])[0], isMissingNote(strings.TrimPrefix(m[3], "</b>: ")))
				rest := m[3]
				if !isHTML {
					rest = ": " + rest
				}
				k.splitNote(m[1], k.ids(m[2]), rest, isHTML)
			}
			i--
			if isHTML {
				k.body = append(k.body, "<li>RULE NOTES</li>")
			} else {
				k.body = append(k.body, "  - RULE NOTES")
			}
			continue
		}
		k.body = append(k.body, l)
	}
}

var missingRE = regexp.MustCompile(`^(not evaluated: series )(.*?) (is|are) missing(.*)$`)

// splitNote records a text or HTML note of the rules ids (prefix: what
// precedes "rule(s)", rest: what follows the ids) as each rule's own
// note, checking that the note is exactly their merge: their series in
// the order of their Meta.Needs, their titles as what it hides.
func (k *keyedOutput) splitNote(prefix string, ids []string, rest string, isHTML bool) {
	k.inOrder("note", ids)
	esc := func(s string) string { return s }
	lead, hidesPre, hidesPost := ": ", "; hides ", "; fix: "
	if isHTML {
		esc = html.EscapeString
		lead, hidesPre, hidesPost = "</b>: ", ` <span class="muted">(hides: `, `)</span>`
	}
	src := func(id string) string { return "rule " + id }
	msg := strings.TrimPrefix(rest, lead)
	mm := missingRE.FindStringSubmatch(msg)
	if mm == nil || len(ids) == 1 {
		// one rule's own, or not for a missing series (impossible data):
		// the same message for each rule
		for _, id := range ids {
			k.add(id, "note: "+prefix+src(id)+rest)
		}
		return
	}
	own, ok := k.ownSeries(ids, mm[2]+" "+mm[3]+" missing")
	if !ok {
		return
	}
	after := mm[4]
	var titles []string
	for _, id := range ids {
		titles = append(titles, esc(k.reg.meta[id].Title))
	}
	hides := strings.HasPrefix(after, hidesPre)
	if hides {
		want := hidesPre + strings.Join(titles, "; ") + hidesPost
		if !strings.HasPrefix(after, want) {
			k.errf("a note of rules %v: hides should be their titles %q: %.200s", ids, want, after)
			return
		}
		after = strings.TrimPrefix(after, want)
	}
	for i, id := range ids {
		h := ""
		if hides {
			h = hidesPre + titles[i] + hidesPost
		}
		k.add(id, "note: "+prefix+src(id)+lead+mm[1]+own[i]+" is missing"+h+after)
	}
}

// splitJSON handles indented JSON: coverage blocks, rule notes and the
// fleet scan's signals, found by their keys and kept line by line.
func (k *keyedOutput) splitJSON(lines []string) {
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trim := strings.TrimLeft(l, " ")
		ind := l[:len(l)-len(trim)]
		switch {
		case trim == `"coverage": {`:
			end := blockEnd(lines, i, ind)
			k.splitCoverage(lines[i:end+1], ind)
			i = end
			continue
		case trim == `"signals": {`:
			end := blockEnd(lines, i, ind)
			for _, s := range lines[i+1 : end] {
				kv := strings.SplitN(strings.TrimSpace(strings.TrimSuffix(s, ",")), ": ", 2)
				id, err := strconv.Unquote(kv[0])
				if err != nil || k.ids(id) == nil {
					k.errf("signals: %q is not a registered rule", s)
					continue
				}
				k.add(id, "signal: "+kv[1])
			}
			k.body = append(k.body, ind+`"signals": {RULES}`+strings.TrimPrefix(lines[end], ind+"}"))
			i = end
			continue
		case trim == "{" && k.ruleNote(lines, i, ind) != nil:
			// a run of rule notes: each kept by its rules; every one but
			// the last closes with a comma, the last as the body says
			comma := ","
			var order noteOrder
			for i < len(lines) && lines[i] == ind+"{" {
				ids := k.ruleNote(lines, i, ind)
				if ids == nil {
					break
				}
				prefix, missing := k.noteKind(lines, i, ind)
				order.next(k, prefix, ids[0], missing)
				if comma != "," {
					k.errf("notes: a note before %q closes without a comma", lines[i+1])
				}
				end := blockEnd(lines, i, ind)
				comma = trailingComma(lines[end])
				k.splitJSONNote(lines[i:end+1], ind, ids)
				i = end + 1
			}
			k.body = append(k.body, ind+"RULE NOTES"+comma)
			i--
			continue
		}
		k.body = append(k.body, l)
	}
}

// noteOrder checks the order of a run of rule notes, as evaluate makes
// it for each instance (prefix): first the notes of rules missing a
// series, by their first rule, then the rules' own notes, by rule.
type noteOrder struct {
	prefix  string
	missing bool
	idx     int
	started bool
}

func (o *noteOrder) next(k *keyedOutput, prefix, first string, missing bool) {
	idx := k.reg.index[first]
	if o.started && prefix == o.prefix {
		if (missing && !o.missing) || (missing == o.missing && idx < o.idx) {
			k.errf("notes: %srule %s's note comes after rule %s's: notes of missing series first, then by rule", prefix, first, k.reg.ids[o.idx])
		}
	}
	*o = noteOrder{prefix: prefix, missing: missing, idx: idx, started: true}
}

// noteKind is the instance prefix of the note object at lines[i] and
// whether it is for a missing series.
func (k *keyedOutput) noteKind(lines []string, i int, ind string) (string, bool) {
	end := blockEnd(lines, i, ind)
	var n struct{ Source, Message string }
	_ = json.Unmarshal([]byte(strings.TrimSuffix(strings.Join(lines[i:end+1], "\n"), ",")), &n)
	m := noteSourceRE.FindStringSubmatch(n.Source)
	if m == nil {
		return "", false
	}
	return m[1], isMissingNote(n.Message)
}

var seriesListRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(, [a-zA-Z_:][a-zA-Z0-9_:]*)*$`)

// isMissingNote says whether a note's message is that of rules skipped for
// a missing series (not a rule's own note about what it lacks).
func isMissingNote(msg string) bool {
	mm := missingRE.FindStringSubmatch(msg)
	return mm != nil && seriesListRE.MatchString(mm[2])
}

// blockEnd is the line closing the object or array opened at lines[i].
func blockEnd(lines []string, i int, ind string) int {
	for j := i + 1; j < len(lines); j++ {
		if strings.HasPrefix(lines[j], ind+"}") || strings.HasPrefix(lines[j], ind+"]") {
			return j
		}
	}
	return len(lines) - 1
}

var noteSourceRE = regexp.MustCompile(`^((?:[^ ]+: )?)rules? ([a-z0-9_]+(?:, [a-z0-9_]+)*)$`)

// ruleNote is the rules of the note object at lines[i] (nil when it is not
// a rule's note).
func (k *keyedOutput) ruleNote(lines []string, i int, ind string) []string {
	end := blockEnd(lines, i, ind)
	var n struct{ Source string }
	if json.Unmarshal([]byte(strings.TrimSuffix(strings.Join(lines[i:end+1], "\n"), ",")), &n) != nil {
		return nil
	}
	m := noteSourceRE.FindStringSubmatch(n.Source)
	if m == nil {
		return nil
	}
	return k.ids(m[2])
}

// splitJSONNote records a note object as each of its rules' own note:
// the object's lines with its source, message and hides those of the rule
// alone, after checking that the object is exactly their merge.
func (k *keyedOutput) splitJSONNote(obj []string, ind string, ids []string) {
	var n struct{ Source, Message, Hides, Fix string }
	text := strings.TrimSuffix(strings.Join(obj, "\n"), ",")
	if err := json.Unmarshal([]byte(text), &n); err != nil {
		k.errf("note %q: %v", text, err)
		return
	}
	k.inOrder("note", ids)
	prefix := noteSourceRE.FindStringSubmatch(n.Source)[1]
	msgs := make([]string, len(ids))
	for i := range ids {
		msgs[i] = n.Message
	}
	if mm := missingRE.FindStringSubmatch(n.Message); mm != nil && mm[4] == "" && len(ids) > 1 {
		own, ok := k.ownSeries(ids, mm[2]+" "+mm[3]+" missing")
		if !ok {
			return
		}
		for i := range ids {
			msgs[i] = mm[1] + own[i] + " is missing"
		}
	}
	var titles []string
	for _, id := range ids {
		titles = append(titles, k.reg.meta[id].Title)
	}
	if n.Hides != "" && len(ids) > 1 && n.Hides != strings.Join(titles, "; ") {
		k.errf("note of %s: hides %q, want their titles %q", n.Source, n.Hides, strings.Join(titles, "; "))
	}
	for i, id := range ids {
		for j, l := range obj {
			if j == len(obj)-1 {
				l = strings.TrimSuffix(l, ",")
			}
			l = strings.TrimPrefix(l, ind)
			t := strings.TrimSpace(l)
			comma := ""
			if strings.HasSuffix(t, ",") {
				comma = ","
			}
			switch {
			case strings.HasPrefix(t, `"source": `):
				l = strings.Replace(l, t, `"source": `+jsonQuote(prefix+"rule "+id)+comma, 1)
			case strings.HasPrefix(t, `"message": `):
				l = strings.Replace(l, t, `"message": `+jsonQuote(msgs[i])+comma, 1)
			case strings.HasPrefix(t, `"hides": `) && len(ids) > 1:
				l = strings.Replace(l, t, `"hides": `+jsonQuote(titles[i])+comma, 1)
			}
			// the object's own text must be what it holds
			k.add(id, "note: "+l)
		}
	}
	// the object's lines are the fields it holds, nothing else
	var back struct{ Source, Message, Hides, Fix string }
	if json.Unmarshal([]byte(text), &back) != nil || back != n {
		k.errf("note %q does not read back", text)
	}
}

// ownSeries is, for each rule of a merged note, the series it misses: the
// first of its Meta.Needs the note names. It checks that the note names
// exactly those (in order, each once): "a, b are missing".
func (k *keyedOutput) ownSeries(ids []string, named string) ([]string, bool) {
	full := named
	named = strings.TrimSuffix(strings.TrimSuffix(named, " is missing"), " are missing")
	listed := strings.Split(named, ", ")
	var own, series []string
	for _, id := range ids {
		s := ""
		for _, n := range k.reg.meta[id].Needs {
			if slices.Contains(listed, n.Series) {
				s = n.Series
				break
			}
		}
		if s == "" {
			k.errf("a note of rules %v: rule %s needs none of the series %s", ids, id, named)
			return nil, false
		}
		own = append(own, s)
		if !slices.Contains(series, s) {
			series = append(series, s)
		}
	}
	verb := " is missing"
	if len(series) > 1 {
		verb = " are missing"
	}
	if strings.Join(series, ", ")+verb != full {
		k.errf("a note of rules %v says series %s: their Meta.Needs say %s", ids, full, strings.Join(series, ", ")+verb)
		return nil, false
	}
	return own, true
}

func trailingComma(s string) string {
	if strings.HasSuffix(s, ",") {
		return ","
	}
	return ""
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// splitCoverage checks a coverage block against the registry and keeps
// each not-evaluated entry by its rule.
func (k *keyedOutput) splitCoverage(block []string, ind string) {
	text := strings.TrimSuffix(strings.Join(block, "\n"), ",")
	var c struct {
		Coverage struct {
			Rules        int
			Evaluated    []string
			NotEvaluated []struct{ ID string } `json:"not_evaluated"`
		}
	}
	if err := json.Unmarshal([]byte("{"+text+"}"), &c); err != nil {
		k.errf("coverage: %v", err)
		k.body = append(k.body, block...)
		return
	}
	k.checkTotal("coverage", c.Coverage.Rules)
	var skipped []string
	for _, s := range c.Coverage.NotEvaluated {
		skipped = append(skipped, s.ID)
	}
	all := append(append([]string(nil), c.Coverage.Evaluated...), skipped...)
	sort.Strings(all)
	reg := append([]string(nil), k.reg.ids...)
	sort.Strings(reg)
	if !slices.Equal(all, reg) {
		k.errf("coverage: evaluated %v and not evaluated %v are not the registry's %v", c.Coverage.Evaluated, skipped, k.reg.ids)
	}
	k.inOrder("coverage: evaluated", c.Coverage.Evaluated)
	k.inOrder("coverage: not evaluated", skipped)
	in := ind + "  "
	for i := 0; i < len(block); i++ {
		l := block[i]
		t := strings.TrimPrefix(l, in)
		key, _, _ := strings.Cut(t, ": ")
		switch key {
		case `"rules"`:
			k.body = append(k.body, in+`"rules": RULES`+trailingComma(t))
		case `"evaluated"`, `"not_evaluated"`:
			end := i
			if !strings.HasPrefix(t, key+": []") {
				end = blockEnd(block, i, in)
			}
			if key == `"evaluated"` {
				// the ids, checked against the registry above: each line
				// must be one of them
				for j, id := range c.Coverage.Evaluated {
					want := in + "  " + jsonQuote(id)
					if j < len(c.Coverage.Evaluated)-1 {
						want += ","
					}
					if i+1+j >= end || block[i+1+j] != want {
						k.errf("coverage: evaluated line %d is not %q", j+1, want)
						break
					}
				}
			} else {
				k.splitSkips(block[i+1:end], in+"  ")
			}
			k.body = append(k.body, in+key+": [RULES]"+trailingComma(block[end]))
			i = end
		default:
			k.body = append(k.body, l)
		}
	}
}

// splitSkips keeps each not-evaluated entry (an object's lines) by its
// rule, checking that the entries are separated as MarshalIndent does, so
// that dropping them from the body loses nothing.
func (k *keyedOutput) splitSkips(lines []string, ind string) {
	for j := 0; j < len(lines); j++ {
		if lines[j] != ind+"{" {
			k.errf("coverage: not evaluated: %q opens no entry", lines[j])
			return
		}
		end := j + 1
		for end < len(lines) && strings.HasPrefix(lines[end], ind+"  ") {
			end++
		}
		if end == len(lines) {
			k.errf("coverage: not evaluated: an entry is not closed")
			return
		}
		closing := ind + "}"
		if end < len(lines)-1 {
			closing += ","
		}
		if lines[end] != closing {
			k.errf("coverage: not evaluated: %q, want %q", lines[end], closing)
		}
		var e struct{ ID string }
		if err := json.Unmarshal([]byte(strings.Join(lines[j:end], "\n")+"}"), &e); err != nil || k.ids(e.ID) == nil {
			k.errf("coverage: not evaluated: an entry of no registered rule: %v", lines[j:end])
			return
		}
		for _, f := range lines[j+1 : end] {
			k.add(e.ID, "coverage: "+strings.TrimPrefix(f, ind+"  "))
		}
		j = end
	}
}

// splitAlerts keeps each alerting rule by the rule it approximates.
func (k *keyedOutput) splitAlerts(lines []string) {
	last := -1
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "      - alert: ") {
			k.body = append(k.body, lines[i])
			continue
		}
		end := i + 1
		for end < len(lines) && strings.HasPrefix(lines[end], "        ") {
			end++
		}
		id := ""
		for _, l := range lines[i:end] {
			if s, ok := strings.CutPrefix(strings.TrimSpace(l), "memdoctor_rule: "); ok {
				id = s
			}
		}
		if k.ids(id) == nil {
			k.errf("alert %q names no registered rule (memdoctor_rule %q)", lines[i], id)
		} else if k.reg.meta[id].Alerts == nil {
			k.errf("alert %q for rule %s, which has no Meta.Alerts", lines[i], id)
		} else {
			if k.reg.index[id] < last {
				k.errf("alert %q: rule %s is not in registry order", lines[i], id)
			}
			last = k.reg.index[id]
		}
		for _, l := range lines[i:end] {
			k.add(id, "alert: "+l)
		}
		if len(k.body) == 0 || k.body[len(k.body)-1] != "      - ALERTS" {
			k.body = append(k.body, "      - ALERTS")
		}
		i = end - 1
	}
	// every rule with alerts has some here
	for _, id := range k.reg.ids {
		if k.reg.meta[id].Alerts != nil && len(k.rules[id]) == 0 {
			k.errf("rule %s has Meta.Alerts and no alert here", id)
		}
	}
}

// ruleGoldenDir holds each rule's part of the outputs.
var ruleGoldenDir = filepath.Join(goldenDir, "rules")

// readRuleSections reads testdata/golden/rules/<id>.txt: its sections by
// output name.
func readRuleSections(id string) (map[string][]string, error) {
	b, err := os.ReadFile(filepath.Join(ruleGoldenDir, id+".txt"))
	if os.IsNotExist(err) {
		return map[string][]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	cur := ""
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if s, ok := strings.CutPrefix(l, "== "); ok {
			cur = s
			continue
		}
		out[cur] = append(out[cur], l)
	}
	return out, nil
}

func writeRuleSections(id string, secs map[string][]string) error {
	path := filepath.Join(ruleGoldenDir, id+".txt")
	var names []string
	for n, recs := range secs {
		if len(recs) > 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString("== " + n + "\n")
		for _, r := range secs[n] {
			b.WriteString(r + "\n")
		}
	}
	if err := os.MkdirAll(ruleGoldenDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// matchRuleParts compares (or with -update writes) each rule's part of
// output name with its section in testdata/golden/rules/<id>.txt.
func matchRuleParts(t *testing.T, k *keyedOutput) {
	t.Helper()
	ids := append([]string(nil), k.reg.ids...)
	// rules no longer registered that still have a file
	files, _ := filepath.Glob(filepath.Join(ruleGoldenDir, "*.txt"))
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".txt")
		if _, ok := k.reg.index[id]; !ok {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		secs, err := readRuleSections(id)
		if err != nil {
			t.Fatal(err)
		}
		got, want := k.rules[id], secs[k.name]
		if slices.Equal(got, want) {
			continue
		}
		if *update {
			secs[k.name] = got
			if err := writeRuleSections(id, secs); err != nil {
				t.Fatal(err)
			}
			continue
		}
		path := filepath.Join(ruleGoldenDir, id+".txt")
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("%s, section %s, differs at record %d:\n got: %.300s\nwant: %.300s\n(go test ./cmd/memdoctor -run Golden -update after a deliberate change)", path, k.name, i+1, got[i], want[i])
			}
		}
		t.Fatalf("%s, section %s: %d records, want %d (go test ./cmd/memdoctor -run Golden -update after a deliberate change)", path, k.name, len(got), len(want))
	}
}
