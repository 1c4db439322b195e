package diagnose_test

// Rule cases: every rule has a folder testdata/<rule_id>/ with at least one
// case that fires and one that stays quiet. Trend rules use .series files:
// the # directives below plus series in the seriestest language (a window
// over time); instant rules use .prom files, a small text file:
//
//	# why: what situation this is
//	# base: healthy-6.18-x86_64-hybrid    a real capture in testdata/captures (required)
//	# uptime: 10d                         set node_boot_time_seconds that long before the sample
//	# drop: node_uname_info               remove every series of a name
//	# expect: warning                     quiet | info | warning | critical
//	# evidence: name=value                a number the finding must carry (±1%)
//	# remedy: text                        a remedy title must contain it
//	# summary: text                       the summary must contain it (.series)
//	node_vmstat_allocstall_normal 200     override or add a series (exposition syntax)
//
// Bases are real captures, never edited; a case states only what differs
// from them, so it reads like the situation it describes.

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/seriestest"
)

type ruleCase struct {
	why, base, expect string
	src               string // .series: the whole file
	uptime            time.Duration
	drops             []string
	evidence          map[string]float64
	remedies          []string
	summaries         []string
	overrides         []sample.Metric
}

func parseCase(t *testing.T, path string) ruleCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := ruleCase{evidence: map[string]float64{}}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "#") {
			k, v, ok := strings.Cut(strings.TrimSpace(l[1:]), ":")
			if !ok {
				continue
			}
			c.directive(t, strings.TrimSpace(k), strings.TrimSpace(v), path, line)
			continue
		}
		m, err := parseSeries(l)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		c.overrides = append(c.overrides, m)
	}
	if c.base == "" || c.expect == "" {
		t.Fatalf("%s: needs # base: and # expect:", path)
	}
	return c
}

// parseSeriesCase reads the # directives of a .series case; the file itself
// is the window.
func parseSeriesCase(t *testing.T, path string) ruleCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := ruleCase{evidence: map[string]float64{}, src: string(b)}
	for i, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "#"), ":")
		if !strings.HasPrefix(strings.TrimSpace(l), "#") || !ok {
			continue
		}
		c.directive(t, strings.TrimSpace(k), strings.TrimSpace(v), path, i+1)
	}
	if c.expect == "" {
		t.Fatalf("%s: needs # expect:", path)
	}
	return c
}

// directive applies one "# key: value" line of a case file.
func (c *ruleCase) directive(t *testing.T, k, v, path string, line int) {
	t.Helper()
	switch k {
	case "why":
		c.why = v
	case "base":
		c.base = v
	case "expect":
		c.expect = v
	case "remedy":
		c.remedies = append(c.remedies, v)
	case "summary":
		c.summaries = append(c.summaries, v)
	case "drop":
		c.drops = append(c.drops, v)
	case "uptime":
		d, err := promql.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		c.uptime = d
	case "evidence":
		n, x, ok := strings.Cut(v, "=")
		fv, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if !ok || err != nil {
			t.Fatalf("%s:%d: evidence wants name=number", path, line)
		}
		c.evidence[strings.TrimSpace(n)] = fv
	}
}

// parseSeries reads `name{a="b",c="d"} value` (the key as Metric.Key
// writes it), its labels sorted as sample.L sorts them.
func parseSeries(l string) (sample.Metric, error) {
	var m sample.Metric
	i := strings.LastIndexAny(l, " \t")
	if i < 0 {
		return m, fmt.Errorf("want `name value`, got %q", l)
	}
	var err error
	if m.Name, m.Labels, err = sample.ParseKey(strings.TrimSpace(l[:i])); err != nil {
		return m, fmt.Errorf("%q: %w", l, err)
	}
	slices.SortFunc(m.Labels, func(a, b sample.Label) int { return strings.Compare(a.Name, b.Name) })
	if m.Value, err = strconv.ParseFloat(l[i+1:], 64); err != nil {
		return m, fmt.Errorf("bad value in %q", l)
	}
	return m, nil
}

var bases = map[string]*sample.Snapshot{}

// rawNumber matches what people should never be shown: exponents and
// more than three decimals.
var rawNumber = regexp.MustCompile(`\d[eE][+-]?\d|\.\d{4,}`)

// hexWord: a container id or pod uid (hex digits, dashed or not, the uid
// often right after "pod") that a summary may name; its digits around an
// "e" are no exponent.
var hexWord = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{12,}\b`)

// showsRawNumber: rawNumber in a text, outside the hex ids it names (an id
// of digits only is kept: it may be a raw number).
func showsRawNumber(s string) bool {
	return rawNumber.MatchString(hexWord.ReplaceAllStringFunc(s, func(w string) string {
		if strings.ContainsAny(w, "abcdef") {
			return "<id>"
		}
		return w
	}))
}

// baseSnapshot collects a real capture (cached per test binary).
func baseSnapshot(t *testing.T, name string) sample.Snapshot {
	t.Helper()
	if s, ok := bases[name]; ok {
		return clone(s)
	}
	path := filepath.Join("..", "..", "testdata", "captures", name+".txtar")
	fsys, prov, err := capture.LoadFile(path)
	if err != nil {
		t.Fatalf("base %s: %v", name, err)
	}
	pfs := procfs.NewFSFrom(fsys, prov.PageSize)
	pfs.GlibcBanner = prov.Glibc
	res, err := collect.Collect(pfs, collect.Options{TopProcesses: 5, TopCgroups: 5, ArenaScan: true,
		Now: func() time.Time { return prov.Time }})
	if err != nil {
		t.Fatalf("base %s: %v", name, err)
	}
	bases[name] = &res.Snapshot
	return clone(&res.Snapshot)
}

func clone(s *sample.Snapshot) sample.Snapshot {
	c := sample.Snapshot{Time: s.Time, Instance: s.Instance}
	c.Metrics = append(c.Metrics, s.Metrics...)
	return c
}

func apply(s sample.Snapshot, c ruleCase) *sample.Snapshot {
	out := &sample.Snapshot{Time: s.Time, Instance: s.Instance}
	drop := map[string]bool{}
	for _, d := range c.drops {
		drop[d] = true
	}
	if c.uptime > 0 {
		drop["node_boot_time_seconds"] = true
	}
	over := map[string]sample.Metric{}
	for _, m := range c.overrides {
		over[m.Key()] = m
	}
	for _, m := range s.Metrics {
		if drop[m.Name] {
			continue
		}
		if o, ok := over[m.Key()]; ok {
			m = o
			delete(over, m.Key())
		}
		out.AddMetric(m)
	}
	for _, m := range c.overrides {
		if _, ok := over[m.Key()]; ok {
			out.AddMetric(m)
		}
	}
	if c.uptime > 0 {
		out.Add("node_boot_time_seconds", float64(s.Time.Add(-c.uptime).Unix()))
	}
	return out
}

func TestRuleCases(t *testing.T) {
	for _, r := range diagnose.Rules() {
		id := r.Meta().ID
		files, _ := filepath.Glob(filepath.Join("testdata", id, "*.prom"))
		series, _ := filepath.Glob(filepath.Join("testdata", id, "*.series"))
		files = append(files, series...)
		fires, quiet := 0, 0
		for _, file := range files {
			isSeries := strings.HasSuffix(file, ".series")
			var c ruleCase
			if isSeries {
				c = parseSeriesCase(t, file)
			} else {
				c = parseCase(t, file)
			}
			if c.expect == "quiet" {
				quiet++
			} else {
				fires++
			}
			name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".prom"), ".series")
			t.Run(id+"/"+name, func(t *testing.T) {
				var rep *model.Report
				if isSeries {
					rep = diagnose.Run(diagnose.Data{Window: seriestest.MustParse(t, c.src), Source: "test"})
				} else {
					rep = diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, c.base), c), Source: "test"})
				}
				var got []model.Finding
				for _, f := range rep.Findings {
					if f.ID == id {
						got = append(got, f)
					}
				}
				if c.expect == "quiet" {
					for _, f := range got {
						t.Errorf("%s fired (%s): %s", id, f.Severity, f.Summary)
					}
					// Quiet because it judged the data, not because the data
					// cannot be true or lacks MemTotal (cases built on a base
					// host must keep its sizes consistent).
					for _, sk := range rep.Coverage.NotEvaluated {
						if sk.ID == id && (sk.Reason == model.SkipInvalidData || strings.Contains(sk.Detail, "MemTotal")) {
							t.Errorf("%s is quiet only because it was not evaluated: %s (%s)", id, sk.Reason, sk.Detail)
						}
					}
					return
				}
				if len(got) == 0 {
					t.Fatalf("%s did not fire (%s); notes %+v", id, c.why, rep.Notes)
				}
				f := got[0]
				if string(f.Severity) != c.expect {
					t.Errorf("severity %s, want %s: %s", f.Severity, c.expect, f.Summary)
				}
				if f.Subject == "" || f.Summary == "" || len(f.Evidence) == 0 || len(f.Remedies) == 0 {
					t.Errorf("finding lacks subject, summary, evidence or remedies: %+v", f)
				}
				for _, want := range c.summaries {
					if !strings.Contains(f.Summary, want) {
						t.Errorf("summary %q lacks %q", f.Summary, want)
					}
				}
				for _, want := range c.remedies {
					found := false
					for _, r := range f.Remedies {
						found = found || strings.Contains(r.Title, want)
					}
					if !found {
						t.Errorf("no remedy mentions %q", want)
					}
				}
				if showsRawNumber(f.Summary) {
					t.Errorf("summary shows a raw number: %s", f.Summary)
				}
				for _, e := range f.Evidence {
					if s := e.Human(); e.Text == "" && rawNumber.MatchString(s) {
						t.Errorf("evidence %s prints as %q: raw number (value %v, unit %q)", e.Name, s, e.Value, e.Unit)
					}
				}
				for name, want := range c.evidence {
					found := false
					for _, e := range f.Evidence {
						if e.Name == name {
							found = true
							if math.Abs(e.Value-want) > math.Abs(want)*0.01 {
								t.Errorf("evidence %s = %v, want %v", name, e.Value, want)
							}
						}
					}
					if !found {
						t.Errorf("evidence %s missing: %+v", name, f.Evidence)
					}
				}
			})
		}
		if fires == 0 || quiet == 0 {
			t.Errorf("rule %s needs a firing and a quiet case in testdata/%s/ (has %d firing, %d quiet)", id, id, fires, quiet)
		}
	}
}
