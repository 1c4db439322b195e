package runtimes

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/exposition"
)

// Page is a scraped /metrics page: its samples grouped by family name, as
// Normalize reads them.
//
// A family is a metric name, except that the samples of a family declared
// a summary or a histogram by a "# TYPE" line (name_sum, name_count, and
// name_bucket or the quantiles) make one family of that name, each of its
// members the count and sum of one label set (quantile and le aside).
// Without such a line, name_sum and name_count are plain families of their
// own. This is how Prometheus' text parser groups a page, so the names
// Normalize looks up mean the same on every page.
type Page map[string]*family

type familyKind uint8

const (
	plainFamily familyKind = iota // counter, gauge, untyped, unknown, ...
	summaryFamily
	histogramFamily
)

type family struct {
	kind    familyKind
	members []*member
	byKey   map[string]*member // summaries and histograms: members by key
}

// member is one label set of a family: its value (plain families), or its
// count and sum (summaries and histograms).
type member struct {
	labels     map[string]string
	value      float64
	count, sum float64
}

// errNotPage is what a page that does not parse fails with.
var errNotPage = errors.New("not a Prometheus text page")

// ParsePage parses a Prometheus text or OpenMetrics page. Comments other
// than "# TYPE" are ignored (HELP, UNIT, EOF), and so are timestamps and
// exemplars; empty label values mean no label. A line that is not a
// sample fails the page, naming the line.
func ParsePage(body []byte) (Page, error) {
	p := Page{}
	types := map[string]familyKind{}
	for n := 1; len(body) > 0; n++ {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte("\n"))
		line = exposition.TrimBlanks(bytes.TrimSuffix(line, []byte("\r")))
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			if name, kind, ok := typeLine(line); ok {
				types[name] = kind
			}
			continue
		}
		if err := p.add(line, types); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", errNotPage, n, err)
		}
	}
	return p, nil
}

// typeLine reads "# TYPE name type" (the blank after # may be left out;
// the type's case does not matter), as Prometheus' parser reads it.
func typeLine(line []byte) (string, familyKind, bool) {
	word, rest := exposition.NextToken(line[1:])
	if string(word) != "TYPE" {
		return "", 0, false
	}
	name, rest := exposition.NextToken(rest)
	typ, _ := exposition.NextToken(rest)
	if len(name) == 0 {
		return "", 0, false
	}
	switch {
	case bytes.EqualFold(typ, []byte("summary")):
		return string(name), summaryFamily, true
	case bytes.EqualFold(typ, []byte("histogram")):
		return string(name), histogramFamily, true
	}
	return string(name), plainFamily, true
}

// add reads one sample line into its family.
func (p Page) add(line []byte, types map[string]familyKind) error {
	end, err := exposition.SeriesEnd(line)
	if err != nil {
		return err
	}
	if end < len(line) && exposition.IsBlank(line[end]) && line[end-1] != '}' {
		// Blanks may stand between a name and its labels: "up {a="b"} 1".
		if rest := exposition.TrimBlanks(line[end:]); len(rest) > 0 && rest[0] == '{' {
			line = append(line[:end:end], rest...) // a copy: line[:end:end] has no room
			if end, err = exposition.SeriesEnd(line); err != nil {
				return err
			}
		}
	}
	// The value follows the series, after blanks or not ("up{}1",
	// "up+1"), as Prometheus' parser reads it.
	if end == len(line) {
		return fmt.Errorf("%w: no value after the series", exposition.ErrMalformed)
	}
	name, labels, err := exposition.ParseSeries(line[:end])
	if err != nil {
		return err
	}
	tok, _ := exposition.NextToken(line[end:])
	v, err := parseValue(tok)
	if err != nil {
		return err
	}
	l := make(map[string]string, len(labels))
	for _, lb := range labels {
		l[lb.Name] = lb.Value
	}

	fam, part := name, ""
	if _, declared := types[name]; !declared {
		for _, suffix := range [...]string{"_sum", "_count", "_bucket"} {
			base, ok := bytes.CutSuffix([]byte(name), []byte(suffix))
			if !ok {
				continue
			}
			if k := types[string(base)]; k == histogramFamily || (k == summaryFamily && suffix != "_bucket") {
				fam, part = string(base), suffix
			}
		}
	}
	kind := types[fam]
	f := p[fam]
	if f == nil {
		f = &family{kind: kind}
		p[fam] = f
	}
	if kind == plainFamily {
		f.members = append(f.members, &member{labels: l, value: v})
		return nil
	}
	// A summary's or histogram's sample: its member is its label set
	// without the quantile or bucket label.
	switch {
	case kind == summaryFamily && part == "":
		delete(l, "quantile")
	case kind == histogramFamily && part == "_bucket":
		delete(l, "le")
	}
	k := key(l)
	m := f.byKey[k]
	if m == nil {
		if f.byKey == nil {
			f.byKey = map[string]*member{}
		}
		m = &member{labels: l}
		f.byKey[k] = m
		f.members = append(f.members, m)
	}
	switch part {
	case "_count":
		// A count is whole: Prometheus' parser keeps it as an integer.
		if v >= 0 && v < math.MaxUint64 {
			v = math.Trunc(v)
		}
		m.count = v
	case "_sum":
		m.sum = v
	}
	return nil
}

// parseValue reads a sample's value: a decimal float, NaN or ±Inf.
// Hexadecimal floats and digit separators, which Go reads but the
// exposition formats do not have, are refused.
func parseValue(tok []byte) (float64, error) {
	if bytes.ContainsAny(tok, "pP_") {
		return 0, fmt.Errorf("%w: bad value %q", exposition.ErrMalformed, tok)
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad value %q", exposition.ErrMalformed, tok)
	}
	return v, nil
}
