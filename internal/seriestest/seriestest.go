// Package seriestest builds sample.Windows for rule tests from a small text
// language, in the spirit of the `load` blocks of Prometheus' promqltest:
// one line per series, with the expanding notation "a+bxn" for long runs.
//
// # Language
//
// The input is read line by line. A "#" outside a quoted label value starts
// a comment that runs to the end of the line; blank lines are ignored.
// A line is a directive or a series:
//
//	start 2026-01-01T00:00:00Z   time of the first sample of every series
//	                             (RFC 3339; default 2026-01-01T00:00:00Z);
//	                             at most once, before the first series
//	interval 15m                 spacing of the samples of the series lines
//	                             that follow (a Go duration or a Prometheus
//	                             one with whole days and weeks, e.g. 1d12h; a
//	                             positive whole number of milliseconds); may
//	                             change between series;
//	                             required before the first series
//	instance host-1              Window.Instance (default ""); at most once
//	NAME{LABELS} VALUES...       a series
//	noise NAME{LABELS} VALUES... sd=X [seed=N]
//	                             a series with Gaussian noise added
//
// NAME is a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) and the
// optional {LABELS} a Prometheus label list: name="value" pairs separated by
// commas, with \\, \" and \n escapes in values. A series named like a
// keyword (start, interval, instance, noise) must be written with braces:
// start{} 1 2 3.
//
// VALUES are space-separated segments that concatenate, each yielding one or
// more consecutive samples:
//
//	v        one value: a decimal number with optional exponent (1.5, -2,
//	         8e9, 1e-3), Inf, +Inf, -Inf or NaN
//	a+bxn    n+1 values a, a+b, …, a+n·b (promqltest's expanding notation)
//	a-bxn    n+1 values a, a−b, …, a−n·b
//	vxn      n+1 copies of v (short for v+0xn)
//	_        one missing sample: no point, but the time slot is used
//	_xn      n+1 missing samples
//
// The k-th sample of a line (counting missing ones) is at start + k·interval.
// The value a+k·b is computed by one multiplication, not by repeated
// addition, so long runs do not accumulate rounding. A line with only
// missing samples makes a series without points. A line may expand to at
// most 1<<20 samples and a whole input to 1<<22.
//
// A noise line adds sd·N(0, 1) to every present value, N drawn from
// math/rand/v2's PCG seeded with (seed, 0) (seed defaults to 0) in sample
// order, so the result is the same on every run. sd must be finite and
// non-negative; the options follow the values, and only noise lines take
// them.
//
// Series keep the order of the input; two lines for the same name and
// labels are an error. The Window's From and To are the times of the
// earliest and latest sample of any series (both start when there is none),
// and Step is the common interval of the series lines, or 0 when they use
// different ones.
//
// Errors are *Error values naming the 1-based line and the offending token.
//
// # Example
//
//	# Slab leak: SUnreclaim grows 4 MB per 15 minutes for 5 days.
//	start 2026-01-01T00:00:00Z
//	interval 15m
//	node_memory_MemAvailable_bytes 8e9-1e6x479
//	node_memory_SUnreclaim_bytes 1e9+4e6x479
//	node_cgroups_cgroups{subsys_name="memory"} 100+50x200 _x10 20000+0x267
//	node_boot_time_seconds 1767225600x239 1767400000x239
//	node_vmstat_allocstall_normal 0 0 5 9 9
//	noise node_memory_Active_file_bytes 5e9+0x479 seed=3 sd=1e7
package seriestest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// defaultStart is the time of the first sample when the input has no start
// directive. It is never modified.
var defaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Limits on the number of samples (missing ones included), so a typo such
// as 1x999999999 fails instead of exhausting memory.
const (
	// MaxSamplesPerLine bounds the samples one series line expands to.
	MaxSamplesPerLine = 1 << 20
	// MaxSamples bounds the samples of the whole input.
	MaxSamples = 1 << 22
)

// Error is a parse error: the 1-based line, the token at fault (empty when
// the whole line is) and what is wrong with it.
type Error struct {
	Line  int
	Token string
	Msg   string
}

// Error renders `seriestest: line N: "token": message`.
func (e *Error) Error() string {
	if e.Token == "" {
		return fmt.Sprintf("seriestest: line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("seriestest: line %d: %q: %s", e.Line, e.Token, e.Msg)
}

// MustParse is Parse for tests: it fails t at once on a parse error.
func MustParse(t testing.TB, src string) *sample.Window {
	t.Helper()
	w, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Parse reads the series language described in the package comment and
// returns the Window it describes. The error, if any, is an *Error.
func Parse(src string) (*sample.Window, error) {
	p := parser{start: defaultStart}
	for i, line := range strings.Split(src, "\n") {
		p.line = i + 1
		if err := p.parseLine(strings.TrimSuffix(line, "\r")); err != nil {
			return nil, err
		}
	}
	return p.window(), nil
}

type parser struct {
	line        int
	start       time.Time
	startSet    bool
	instance    string
	instanceSet bool
	interval    time.Duration
	intervals   map[time.Duration]bool
	series      []*sample.Series
	seen        map[string]int // series key → line
	total       int
	minT, maxT  int64
	anyPoint    bool
}

func (p *parser) errorf(tok, format string, args ...any) error {
	return &Error{Line: p.line, Token: tok, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) window() *sample.Window {
	w := &sample.Window{Instance: p.instance, From: p.start, To: p.start}
	if p.anyPoint {
		w.From = time.UnixMilli(p.minT).UTC()
		w.To = time.UnixMilli(p.maxT).UTC()
	}
	switch len(p.intervals) {
	case 0:
		w.Step = p.interval // no series: the declared interval, if any
	case 1:
		for d := range p.intervals {
			w.Step = d
		}
	}
	for _, s := range p.series {
		w.Add(s)
	}
	return w
}

func (p *parser) parseLine(line string) error {
	line = stripComment(line)
	rest := strings.TrimLeft(line, " \t")
	if rest == "" {
		return nil
	}
	word, after := cutWord(rest)
	switch word {
	case "start":
		return p.parseStart(after)
	case "interval":
		return p.parseInterval(after)
	case "instance":
		return p.parseInstance(after)
	case "noise":
		return p.parseSeries(after, true)
	}
	return p.parseSeries(rest, false)
}

// stripComment cuts line at the first # outside a double-quoted string.
func stripComment(line string) string {
	inQuote := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '#':
			return line[:i]
		}
	}
	return line
}

// cutWord splits s (no leading blanks) at its first blank.
func cutWord(s string) (word, rest string) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], strings.TrimLeft(s[i:], " \t")
	}
	return s, ""
}

// oneArg returns the single argument of a directive.
func (p *parser) oneArg(directive, args string) (string, error) {
	fields := strings.Fields(args)
	switch len(fields) {
	case 0:
		return "", p.errorf(directive, "missing argument")
	case 1:
		return fields[0], nil
	}
	return "", p.errorf(fields[1], "unexpected argument after %s %s", directive, fields[0])
}

func (p *parser) parseStart(args string) error {
	arg, err := p.oneArg("start", args)
	if err != nil {
		return err
	}
	if p.startSet {
		return p.errorf("start", "start given twice")
	}
	if len(p.series) > 0 {
		return p.errorf("start", "start must come before the first series")
	}
	t, err := time.Parse(time.RFC3339Nano, arg)
	if err != nil {
		return p.errorf(arg, "start is not an RFC 3339 time (2026-01-01T00:00:00Z)")
	}
	if t.Year() < 1 || t.Year() > 9999 {
		return p.errorf(arg, "start out of range")
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return p.errorf(arg, "start must be a whole number of milliseconds")
	}
	p.start, p.startSet = t.UTC(), true
	return nil
}

func (p *parser) parseInstance(args string) error {
	arg, err := p.oneArg("instance", args)
	if err != nil {
		return err
	}
	if p.instanceSet {
		return p.errorf("instance", "instance given twice")
	}
	p.instance, p.instanceSet = arg, true
	return nil
}

func (p *parser) parseInterval(args string) error {
	arg, err := p.oneArg("interval", args)
	if err != nil {
		return err
	}
	d, err := parseDuration(arg)
	if err != nil {
		return p.errorf(arg, "%v", err)
	}
	p.interval = d
	return nil
}

// parseDuration parses a Go or Prometheus duration (see promql.ParseDuration)
// and requires a positive whole number of milliseconds.
func parseDuration(s string) (time.Duration, error) {
	d, err := promql.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("not a duration (15s, 1m30s, 2h, 1d)")
	}
	if d <= 0 {
		return 0, fmt.Errorf("interval must be positive")
	}
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("interval must be a whole number of milliseconds")
	}
	return d, nil
}

func (p *parser) parseSeries(s string, noise bool) error {
	name, labels, rest, err := p.parseMetric(s)
	if err != nil {
		return err
	}
	if p.interval == 0 {
		return p.errorf(name, "no interval before the first series")
	}
	key := (&sample.Series{Name: name, Labels: labels}).Key()
	if prev, ok := p.seen[key]; ok {
		return p.errorf(key, "series already defined on line %d", prev)
	}

	var (
		segs          []segment
		n             int
		sd            = math.NaN()
		seed          uint64
		seedSet, opts bool
	)
	for _, tok := range strings.Fields(rest) {
		if k, v, ok := strings.Cut(tok, "="); ok {
			if !noise {
				return p.errorf(tok, "options are only for noise lines (noise %s ... sd=X seed=N)", name)
			}
			opts = true
			switch k {
			case "sd":
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || !(f >= 0) || math.IsInf(f, 0) {
					return p.errorf(tok, "sd must be a finite non-negative number")
				}
				if !math.IsNaN(sd) {
					return p.errorf(tok, "sd given twice")
				}
				sd = f
			case "seed":
				u, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return p.errorf(tok, "seed must be a non-negative integer")
				}
				if seedSet {
					return p.errorf(tok, "seed given twice")
				}
				seed, seedSet = u, true
			default:
				return p.errorf(tok, "unknown option (sd=, seed=)")
			}
			continue
		}
		if opts {
			return p.errorf(tok, "values must come before the options")
		}
		seg, err := parseSegment(tok)
		if err != nil {
			return p.errorf(tok, "%v", err)
		}
		if seg.count > MaxSamplesPerLine-n {
			return p.errorf(tok, "more than %d samples on one line", MaxSamplesPerLine)
		}
		n += seg.count
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return p.errorf(name, "series without values")
	}
	if noise && math.IsNaN(sd) {
		return p.errorf("noise", "noise needs sd=X")
	}
	if n > MaxSamples-p.total {
		return p.errorf(name, "more than %d samples in all", MaxSamples)
	}

	// start + k·interval cannot overflow int64 milliseconds: start is within
	// years 1..9999 (|start| < 2.6e14 ms), an interval is a time.Duration
	// (< 9.3e9 ms) and k < MaxSamples (4.2e6), so |T| < 4e16 ms.
	startMs := p.start.UnixMilli()
	stepMs := p.interval.Milliseconds()
	var rng *rand.Rand
	if noise {
		rng = rand.New(rand.NewPCG(seed, 0))
	}
	pts := make([]sample.Point, 0, n)
	k := int64(0)
	for _, seg := range segs {
		for i := range seg.count {
			if !seg.missing {
				v := seg.value(i)
				if rng != nil {
					v += sd * rng.NormFloat64()
				}
				pts = append(pts, sample.Point{T: startMs + k*stepMs, V: v})
			}
			k++
		}
	}
	if len(pts) > 0 {
		first, last := pts[0].T, pts[len(pts)-1].T
		if !p.anyPoint || first < p.minT {
			p.minT = first
		}
		if !p.anyPoint || last > p.maxT {
			p.maxT = last
		}
		p.anyPoint = true
	}
	if p.seen == nil {
		p.seen = map[string]int{}
		p.intervals = map[time.Duration]bool{}
	}
	p.seen[key] = p.line
	p.intervals[p.interval] = true
	p.total += n
	p.series = append(p.series, &sample.Series{Name: name, Labels: labels, Points: pts})
	return nil
}

// segment is one value token: count samples, missing or a + i·step.
type segment struct {
	missing bool
	a, step float64
	count   int
}

func (s segment) value(i int) float64 {
	if i == 0 {
		return s.a // so that a+Infx0 is a, not a + 0·Inf = NaN
	}
	return s.a + float64(i)*s.step
}

// parseSegment parses one value token: v, a+bxn, a-bxn, vxn, _ or _xn.
func parseSegment(tok string) (segment, error) {
	head, countStr, hasX := strings.Cut(tok, "x")
	count := 1
	if hasX {
		n, err := strconv.ParseUint(countStr, 10, 31)
		if err != nil {
			return segment{}, fmt.Errorf("the count after x must be a non-negative integer")
		}
		if n >= MaxSamplesPerLine {
			return segment{}, fmt.Errorf("more than %d samples on one line", MaxSamplesPerLine)
		}
		count = int(n) + 1
	}
	if head == "_" {
		return segment{missing: true, count: count}, nil
	}
	if !hasX {
		v, ok := parseNumber(head)
		if !ok {
			return segment{}, fmt.Errorf("not a value (1.5, 8e9, Inf, NaN, _, a+bxn, a-bxn, vxn, _xn)")
		}
		return segment{a: v, count: 1}, nil
	}
	// a, a+b or a-b: the operator is the first + or - after the first
	// character that is not an exponent sign.
	op := -1
	for i := 1; i < len(head); i++ {
		if (head[i] == '+' || head[i] == '-') && head[i-1] != 'e' && head[i-1] != 'E' {
			op = i
			break
		}
	}
	if op < 0 {
		v, ok := parseNumber(head)
		if !ok {
			return segment{}, fmt.Errorf("not a value before x (vxn, a+bxn, a-bxn)")
		}
		return segment{a: v, count: count}, nil
	}
	a, okA := parseNumber(head[:op])
	bs := head[op+1:]
	b, okB := parseNumber(bs)
	if !okA || !okB || bs == "" || bs[0] == '+' || bs[0] == '-' {
		return segment{}, fmt.Errorf("not a+bxn or a-bxn (b unsigned)")
	}
	if head[op] == '-' {
		b = -b
	}
	return segment{a: a, step: b, count: count}, nil
}

// parseNumber accepts a decimal number with optional sign, fraction and
// exponent, or ±Inf and NaN; nothing else that strconv.ParseFloat takes
// (no hex, underscores or "infinity").
func parseNumber(s string) (float64, bool) {
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch body {
	case "Inf":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "NaN":
		if body != s {
			return 0, false
		}
		return math.NaN(), true
	}
	// digits [. digits] [e [sign] digits], at least one mantissa digit.
	i, digits := 0, 0
	for i < len(body) && body[i] >= '0' && body[i] <= '9' {
		i++
		digits++
	}
	if i < len(body) && body[i] == '.' {
		i++
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		i++
		if i < len(body) && (body[i] == '+' || body[i] == '-') {
			i++
		}
		exp := 0
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return 0, false
		}
	}
	if i != len(body) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil { // out of range: ±Inf or 0 with ErrRange
		return 0, false
	}
	return v, true
}

// parseMetric reads NAME or NAME{LABELS} at the start of s and returns the
// rest of the line. Not sample.ParseKey, which reads back Labels.String
// only: here blanks and a trailing comma may stand in the braces, label
// names are checked, labels are sorted and a mistake is reported at its
// token; the values are read as ParseKey reads them (sample.UnquoteValue).
func (p *parser) parseMetric(s string) (name string, labels sample.Labels, rest string, err error) {
	i := 0
	for i < len(s) && isNameChar(s[i], i == 0) {
		i++
	}
	name = s[:i]
	if name == "" {
		tok, _ := cutWord(s)
		return "", nil, "", p.errorf(tok, "expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
	}
	if i == len(s) || s[i] == ' ' || s[i] == '\t' {
		return name, nil, s[i:], nil
	}
	if s[i] != '{' {
		tok, _ := cutWord(s)
		return "", nil, "", p.errorf(tok, "bad character %q in metric name", s[i])
	}
	var nv []string
	seen := map[string]bool{}
	i++
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i < len(s) && s[i] == '}' {
			i++
			break
		}
		j := i
		for j < len(s) && isNameChar(s[j], j == i) && s[j] != ':' {
			j++
		}
		lname := s[i:j]
		if lname == "" {
			return "", nil, "", p.errorf(tail(s, i), "expected a label name or }")
		}
		if seen[lname] {
			return "", nil, "", p.errorf(lname, "duplicate label")
		}
		seen[lname] = true
		i = j
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			return "", nil, "", p.errorf(tail(s, i), "expected = after label %s", lname)
		}
		i++
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		val, n, err := sample.UnquoteValue(s[i:])
		if err != nil {
			return "", nil, "", p.errorf(tail(s, i), "expected a quoted label value")
		}
		i += n
		nv = append(nv, lname, val)
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		if i < len(s) && s[i] == '}' {
			i++
			break
		}
		return "", nil, "", p.errorf(tail(s, i), "expected , or } in label list")
	}
	if i < len(s) && s[i] != ' ' && s[i] != '\t' {
		return "", nil, "", p.errorf(tail(s, i), "expected a blank after the label list")
	}
	return name, sample.L(nv...), s[i:], nil
}

// tail returns the rest of s from i up to the next blank, or "end of line".
func tail(s string, i int) string {
	if i >= len(s) {
		return "end of line"
	}
	w, _ := cutWord(s[i:])
	return w
}

func isNameChar(c byte, first bool) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' ||
		!first && c >= '0' && c <= '9'
}
