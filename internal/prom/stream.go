package prom

// Answers are decoded as they stream, never read whole: what is held is the
// series and points kept, and a hostile or broken server cannot make that
// grow past fixed budgets.
//
//   - maxAnswer bounds the decoded bytes of one answer (a gzip bomb, a body
//     without end);
//   - a series repeated in an answer is one series, and a point repeating
//     the time of the point before it replaces it (the last wins): one
//     sample repeated a billion times is held once;
//   - a series holds at most the points its query can have (one for an
//     instant query, the steps of the range for a range query), and an
//     answer at most maxHeld bytes of series and points.
//
// The envelope is Prometheus' ({"status", "data": {"resultType", "result"},
// "errorType", "error", "warnings", "infos"}); any other key is skipped,
// nested at most maxDepth deep.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

const (
	// maxAnswer bounds one decoded answer: a fleet scan of 1,000 hosts
	// over 15 days decodes to about 256 MB over 55 queries, none over
	// 40 MB, so an answer past this is a server gone wrong (or hostile),
	// not data to hold. It streams through and is not held.
	maxAnswer = 256 << 20
	// maxHeld bounds the series and points kept from one answer, as
	// estimated by heldSeries, heldLabel and heldPoint.
	maxHeld = 64 << 20
	// maxString bounds one string of an answer (a label value, a warning).
	maxString = 1 << 20
	// maxDepth bounds the nesting of what is skipped.
	maxDepth = 64
	// heldPoint and heldSeries estimate what a point and a series (beside
	// its label text) cost held.
	heldPoint  = 16
	heldSeries = 320
	heldLabel  = 32
)

// errBudget is matched by the errors of an answer past a budget: they are
// not retried.
var errBudget = errors.New("over budget")

// budgetError is an answer past one of the budgets.
type budgetError struct{ msg string }

func (e *budgetError) Error() string { return e.msg }
func (e *budgetError) Unwrap() error { return errBudget }

// apiAnswer is a decoded API answer.
type apiAnswer struct {
	Status     string
	ErrorType  string
	Error      string
	Warnings   []string
	ResultType string
	// Series of a vector or matrix, in the order first seen; Scalar the
	// value of a scalar or string result.
	Series []*answerSeries
	Scalar *Point
	// Dropped counts points that repeated or preceded the time of the
	// point before them in their series.
	Dropped int
	// Partial: the server said the answer lacks part of the data
	// (VictoriaMetrics' "isPartial").
	Partial bool
	// Values of a label (ResultType "strings": the label values API).
	Values []string
}

type answerSeries struct {
	Metric Labels
	Points []Point
}

// decoder reads one answer from a stream.
type decoder struct {
	r *bufio.Reader
	// perSeries bounds the points of one series; held is what is kept so
	// far, against maxHeld.
	perSeries int
	held      int64
	byFP      map[uint64][]int
	a         apiAnswer
	buf       []byte
	what      string // the query, for messages
}

// decodeAnswer decodes one answer from r, keeping at most perSeries points
// a series.
func decodeAnswer(r io.Reader, perSeries int, what string) (*apiAnswer, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 64<<10), perSeries: perSeries, byFP: map[uint64][]int{}, what: what}
	if err := d.object(0, d.envelope); err != nil {
		return &d.a, err
	}
	if c, err := d.peek(); !errors.Is(err, io.EOF) {
		if err != nil {
			return &d.a, err
		}
		return &d.a, fmt.Errorf("invalid character %q after the answer", c)
	}
	return &d.a, nil
}

// errSyntax is the error of malformed JSON.
var errSyntax = errors.New("malformed JSON")

func syntax(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errSyntax}, args...)...)
}

// peek returns the next byte that is not white space, without reading it.
func (d *decoder) peek() (byte, error) {
	for {
		c, err := d.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			return c, d.r.UnreadByte()
		}
	}
}

func (d *decoder) next() (byte, error) {
	c, err := d.peek()
	if err != nil {
		return 0, unexpectedEOF(err)
	}
	_, _ = d.r.ReadByte()
	return c, nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *decoder) expect(want byte) error {
	c, err := d.next()
	if err != nil {
		return err
	}
	if c != want {
		return syntax("want %q, found %q", want, c)
	}
	return nil
}

// object reads an object, calling field for each key (positioned at its
// value).
func (d *decoder) object(depth int, field func(key string, depth int) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	c, err := d.peek()
	if err != nil {
		return unexpectedEOF(err)
	}
	if c == '}' {
		_, _ = d.r.ReadByte()
		return nil
	}
	for {
		key, err := d.str()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(key, depth+1); err != nil {
			return err
		}
		if c, err = d.next(); err != nil {
			return err
		}
		switch c {
		case '}':
			return nil
		case ',':
		default:
			return syntax("want , or } in an object, found %q", c)
		}
	}
}

// array reads an array, calling elem for each element.
func (d *decoder) array(depth int, elem func(depth int) error) error {
	if err := d.expect('['); err != nil {
		return err
	}
	c, err := d.peek()
	if err != nil {
		return unexpectedEOF(err)
	}
	if c == ']' {
		_, _ = d.r.ReadByte()
		return nil
	}
	for {
		if err := elem(depth + 1); err != nil {
			return err
		}
		if c, err = d.next(); err != nil {
			return err
		}
		switch c {
		case ']':
			return nil
		case ',':
		default:
			return syntax("want , or ] in an array, found %q", c)
		}
	}
}

// isNull reads a null if one is next.
func (d *decoder) isNull() (bool, error) {
	c, err := d.peek()
	if err != nil {
		return false, unexpectedEOF(err)
	}
	if c != 'n' {
		return false, nil
	}
	return true, d.literal()
}

// str reads a string of at most maxString bytes.
func (d *decoder) str() (string, error) {
	if err := d.expect('"'); err != nil {
		return "", err
	}
	d.buf = append(d.buf[:0], '"')
	escaped := false
	for {
		c, err := d.r.ReadByte()
		if err != nil {
			return "", unexpectedEOF(err)
		}
		if c < 0x20 {
			return "", syntax("control character in a string")
		}
		d.buf = append(d.buf, c)
		if len(d.buf) > maxString {
			return "", &budgetError{fmt.Sprintf("a string of the answer to %s is longer than %d MiB", d.what, maxString>>20)}
		}
		switch c {
		case '\\':
			escaped = true
			c, err = d.r.ReadByte()
			if err != nil {
				return "", unexpectedEOF(err)
			}
			d.buf = append(d.buf, c)
		case '"':
			if !escaped && utf8.Valid(d.buf) {
				return string(d.buf[1 : len(d.buf)-1]), nil
			}
			var s string
			if err := json.Unmarshal(d.buf, &s); err != nil {
				return "", syntax("bad string: %v", err)
			}
			return s, nil
		}
	}
}

// number reads the bytes of a number.
func (d *decoder) number() ([]byte, error) {
	if _, err := d.peek(); err != nil {
		return nil, unexpectedEOF(err)
	}
	d.buf = d.buf[:0]
	for {
		c, err := d.r.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			_ = d.r.UnreadByte()
			break
		}
		d.buf = append(d.buf, c)
		if len(d.buf) > 64 {
			return nil, syntax("number too long")
		}
	}
	if len(d.buf) == 0 {
		return nil, syntax("want a number")
	}
	return d.buf, nil
}

// literal reads true, false or null.
func (d *decoder) literal() error {
	c, err := d.next()
	if err != nil {
		return err
	}
	var rest string
	switch c {
	case 't':
		rest = "rue"
	case 'f':
		rest = "alse"
	case 'n':
		rest = "ull"
	default:
		return syntax("unexpected %q", c)
	}
	for i := range len(rest) {
		b, err := d.r.ReadByte()
		if err != nil {
			return unexpectedEOF(err)
		}
		if b != rest[i] {
			return syntax("bad literal")
		}
	}
	return nil
}

// skip reads any value and drops it.
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return syntax("nested more than %d deep", maxDepth)
	}
	c, err := d.peek()
	if err != nil {
		return unexpectedEOF(err)
	}
	switch {
	case c == '{':
		return d.object(depth, func(_ string, depth int) error { return d.skip(depth) })
	case c == '[':
		return d.array(depth, d.skip)
	case c == '"':
		_, err := d.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		b, err := d.number()
		if err == nil && !json.Valid(b) {
			err = syntax("bad number %q", b)
		}
		return err
	}
	return d.literal()
}

// strings reads an array of strings (or null).
func (d *decoder) strings(depth int, out *[]string) error {
	if null, err := d.isNull(); null || err != nil {
		return err
	}
	return d.array(depth, func(int) error {
		s, err := d.str()
		if err != nil {
			return err
		}
		if len(*out) < 100 {
			*out = append(*out, s)
		}
		return nil
	})
}

func (d *decoder) envelope(key string, depth int) error {
	var err error
	switch key {
	case "status":
		d.a.Status, err = d.str()
	case "errorType":
		d.a.ErrorType, err = d.str()
	case "error":
		d.a.Error, err = d.str()
	case "warnings":
		err = d.strings(depth, &d.a.Warnings)
	case "isPartial":
		// VictoriaMetrics' cluster: some storage nodes did not answer.
		var c byte
		if c, err = d.peek(); err == nil && c == 't' {
			d.a.Partial = true
		}
		if err == nil {
			err = d.literal()
		}
	case "data":
		if null, err := d.isNull(); null || err != nil {
			return err
		}
		c, err := d.peek()
		if err != nil {
			return unexpectedEOF(err)
		}
		if c == '[' {
			// The label values API: a list of strings.
			d.a.ResultType = "strings"
			return d.array(depth, func(int) error {
				v, err := d.str()
				if err != nil {
					return err
				}
				d.a.Values = append(d.a.Values, v)
				return d.hold(int64(len(v)) + 16)
			})
		}
		if c != '{' {
			return syntax("data is not an object")
		}
		return d.object(depth, d.data)
	default:
		err = d.skip(depth)
	}
	return err
}

func (d *decoder) data(key string, depth int) error {
	switch key {
	case "resultType":
		var err error
		d.a.ResultType, err = d.str()
		return err
	case "result":
		if null, err := d.isNull(); null || err != nil {
			return err
		}
		if err := d.expect('['); err != nil {
			return err
		}
		c, err := d.peek()
		if err != nil {
			return unexpectedEOF(err)
		}
		if c == ']' {
			_, _ = d.r.ReadByte()
			return nil
		}
		if c != '{' {
			// A scalar or a string: [t, "v"].
			p, err := d.pairRest()
			if err != nil {
				return err
			}
			d.a.Scalar = &p
			return nil
		}
		for { // a vector or a matrix: series after series
			if err := d.series(depth + 1); err != nil {
				return err
			}
			c, err := d.next()
			if err != nil {
				return err
			}
			switch c {
			case ']':
				return nil
			case ',':
			default:
				return syntax("want , or ] in an array, found %q", c)
			}
		}
	}
	return d.skip(depth)
}

// series reads one series of a vector or matrix and merges it into the
// series of the same labels seen before.
func (d *decoder) series(depth int) error {
	var m Labels
	var pts []Point
	var s *answerSeries
	// The points are added as they stream once the labels are known (as
	// Prometheus writes them, labels first); points before the labels
	// are held in pts until then.
	add := func(p Point) error {
		if s == nil {
			if len(pts) >= d.perSeries {
				return d.tooManyPoints()
			}
			pts = append(pts, p)
			return nil
		}
		return d.addPoint(s, p)
	}
	err := d.object(depth, func(key string, depth int) error {
		switch key {
		case "metric":
			if null, err := d.isNull(); null || err != nil {
				return err
			}
			m = Labels{}
			err := d.object(depth, func(name string, _ int) error {
				v, err := d.str()
				if err != nil {
					return err
				}
				if _, ok := m[name]; !ok {
					if err := d.hold(heldLabel + int64(len(name)+len(v))); err != nil {
						return err
					}
				}
				m[name] = v
				return nil
			})
			if err != nil {
				return err
			}
			if s, err = d.seriesOf(m); err != nil {
				return err
			}
			for _, p := range pts {
				if err := d.addPoint(s, p); err != nil {
					return err
				}
			}
			pts = nil
			return nil
		case "value":
			p, err := d.pair()
			if err != nil {
				return err
			}
			return add(p)
		case "values":
			if null, err := d.isNull(); null || err != nil {
				return err
			}
			return d.array(depth, func(int) error {
				p, err := d.pair()
				if err != nil {
					return err
				}
				return add(p)
			})
		}
		return d.skip(depth) // histograms, and what else a server adds
	})
	if err != nil {
		return err
	}
	if s == nil && len(pts) > 0 {
		if s, err = d.seriesOf(Labels{}); err != nil {
			return err
		}
		for _, p := range pts {
			if err := d.addPoint(s, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// seriesOf returns the series of labels m, new or seen before.
func (d *decoder) seriesOf(m Labels) (*answerSeries, error) {
	fp := m.hash()
	for _, i := range d.byFP[fp] {
		if d.a.Series[i].Metric.Equal(m) {
			return d.a.Series[i], nil
		}
	}
	if err := d.hold(heldSeries); err != nil {
		return nil, err
	}
	d.byFP[fp] = append(d.byFP[fp], len(d.a.Series))
	s := &answerSeries{Metric: m}
	d.a.Series = append(d.a.Series, s)
	return s, nil
}

// addPoint adds a point after the last of s: a point at the same time
// replaces it, one before it is dropped.
func (d *decoder) addPoint(s *answerSeries, p Point) error {
	if n := len(s.Points); n > 0 && p.T <= s.Points[n-1].T {
		if p.T == s.Points[n-1].T {
			s.Points[n-1].V = p.V
		}
		d.a.Dropped++
		return nil
	}
	if len(s.Points) >= d.perSeries {
		return d.tooManyPoints()
	}
	if err := d.hold(heldPoint); err != nil {
		return err
	}
	s.Points = append(s.Points, p)
	return nil
}

func (d *decoder) tooManyPoints() error {
	return &budgetError{fmt.Sprintf("a series of the answer to %s has more than the %d points the query can have", d.what, d.perSeries)}
}

// hold counts n more bytes kept, failing past maxHeld.
func (d *decoder) hold(n int64) error {
	d.held += n
	if d.held > maxHeld {
		return &budgetError{fmt.Sprintf("the answer to %s holds more than %d MiB of series and points (%d series so far)", d.what, maxHeld>>20, len(d.a.Series))}
	}
	return nil
}

// pair reads [t, "v"].
func (d *decoder) pair() (Point, error) {
	// Most points are plain decimals wholly in the reader's buffer: read
	// them from there (fastPair), the others byte by byte.
	if b, _ := d.r.Peek(d.r.Buffered()); len(b) > 0 {
		if p, n, ok := fastPair(b); ok {
			_, _ = d.r.Discard(n)
			return p, nil
		}
	}
	if err := d.expect('['); err != nil {
		return Point{}, err
	}
	return d.pairRest()
}

// pairRest reads t, "v"] after the opening bracket.
func (d *decoder) pairRest() (Point, error) {
	b, err := d.number()
	if err != nil {
		return Point{}, err
	}
	t, ok := parseTime(b)
	if !ok {
		return Point{}, syntax("bad time %q", b)
	}
	if err := d.expect(','); err != nil {
		return Point{}, err
	}
	if err := d.expect('"'); err != nil {
		return Point{}, err
	}
	// A value is a number in a string: no escapes, no allocation.
	d.buf = d.buf[:0]
	for {
		c, err := d.r.ReadByte()
		if err != nil {
			return Point{}, unexpectedEOF(err)
		}
		if c == '"' {
			break
		}
		if c == '\\' || c < 0x20 || len(d.buf) > 64 {
			return Point{}, syntax("bad value")
		}
		d.buf = append(d.buf, c)
	}
	v, err := strconv.ParseFloat(string(d.buf), 64)
	if err != nil {
		return Point{}, syntax("bad value %q", d.buf)
	}
	if err := d.expect(']'); err != nil {
		return Point{}, err
	}
	return Point{T: t, V: v}, nil
}

// parseTime reads seconds with up to millisecond decimals in milliseconds
// does: the seconds times 1000 plus the first three decimals.
func parseTime(b []byte) (int64, bool) {
	sec, frac, dot := b, []byte(nil), false
	for k, c := range b {
		if c == '.' {
			sec, frac, dot = b[:k], b[k+1:], true
			break
		}
	}
	s, err := strconv.ParseInt(string(sec), 10, 64)
	if err != nil || (dot && len(frac) == 0) {
		return 0, false
	}
	var ms int64
	for k := range 3 {
		ms *= 10
		if k < len(frac) {
			if frac[k] < '0' || frac[k] > '9' {
				return 0, false
			}
			ms += int64(frac[k] - '0')
		}
	}
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	if s > math.MaxInt64/1000-1 || s < math.MinInt64/1000+1 {
		return 0, false
	}
	if len(b) > 0 && b[0] == '-' {
		ms = -ms // -1.5 is -1500 ms
	}
	return s*1000 + ms, true
}

// fastPair reads a point [t, "v"] from the start of b when it is all
// there and of the common shape: a time of decimal seconds (with any
// fraction, of which the milliseconds are kept, as parseTime does) and a
// value without escapes. It returns the point and the bytes it took, or
// false for anything else (a short buffer, an exponent, a sign, bad
// JSON), which pairRest then reads and judges as before: whatever fastPair
// accepts, pairRest reads to the same point.
func fastPair(b []byte) (Point, int, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return Point{}, 0, false
	}
	i = skipSpace(b, i+1)
	// The seconds: 0 or a digit 1-9 and at most 14 more (no overflow of
	// the milliseconds), then the fraction's first three digits.
	start := i
	var sec int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		sec = sec*10 + int64(b[i]-'0')
		i++
	}
	if i == start || i-start > 15 || (b[start] == '0' && i-start > 1) {
		return Point{}, 0, false
	}
	var ms int64
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-fs < 3 {
				ms = ms*10 + int64(b[i]-'0')
			}
			i++
		}
		if i == fs {
			return Point{}, 0, false
		}
		for k := min(i-fs, 3); k < 3; k++ {
			ms *= 10
		}
	}
	if i >= len(b) || b[i] == 'e' || b[i] == 'E' {
		return Point{}, 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ',' {
		return Point{}, 0, false
	}
	i = skipSpace(b, i+1)
	if i >= len(b) || b[i] != '"' {
		return Point{}, 0, false
	}
	i++
	vs := i
	for i < len(b) && b[i] != '"' {
		if b[i] == '\\' || b[i] < 0x20 || i-vs > 64 {
			return Point{}, 0, false
		}
		i++
	}
	if i >= len(b) {
		return Point{}, 0, false
	}
	v, ok := parseDecimal(b[vs:i])
	if !ok {
		var err error
		if v, err = strconv.ParseFloat(string(b[vs:i]), 64); err != nil {
			return Point{}, 0, false
		}
	}
	i = skipSpace(b, i+1)
	if i >= len(b) || b[i] != ']' {
		return Point{}, 0, false
	}
	return Point{T: sec*1000 + ms, V: v}, i + 1, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimal reads a plain decimal, -?[0-9]+(\.[0-9]+)?, whose digits
// make an integer m of at most 2^53 with at most 22 of them after the
// point: m and 10^k are then exact float64s, and their quotient is
// rounded once, to the float64 nearest the decimal, as strconv.ParseFloat
// rounds it. Anything else (an exponent, NaN, Inf, more digits) is false,
// for strconv.ParseFloat.
func parseDecimal(s []byte) (float64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var m uint64
	digits, frac, dot := 0, 0, -1
	for k, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
			if digits > 19 {
				return 0, false
			}
			m = m*10 + uint64(c-'0')
			if dot >= 0 {
				frac++
			}
		case c == '.' && dot < 0 && k > 0:
			dot = k
		default:
			return 0, false
		}
	}
	if digits == 0 || dot == len(s)-1 || m > 1<<53 || frac >= len(pow10) {
		return 0, false
	}
	v := float64(m) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}
