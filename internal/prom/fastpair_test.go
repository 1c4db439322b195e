package prom

import (
	"bufio"
	"math"
	"strconv"
	"strings"
	"testing"
)

// slowPair reads a point byte by byte, as pair does when fastPair
// declines.
func slowPair(b []byte) (float64, int64, error) {
	d := &decoder{r: bufio.NewReader(strings.NewReader(string(b))), what: "q"}
	if err := d.expect('['); err != nil {
		return 0, 0, err
	}
	p, err := d.pairRest()
	return p.V, p.T, err
}

func sameFloat(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
}

// checkFastPair: what fastPair accepts, the byte-by-byte reader reads to
// the same point, having taken the same bytes.
func checkFastPair(t *testing.T, s string) bool {
	t.Helper()
	p, n, ok := fastPair([]byte(s))
	if !ok {
		return false
	}
	v, ts, err := slowPair([]byte(s[:n]))
	if err != nil {
		t.Fatalf("%q: fast path read %v, the byte-by-byte reader fails: %v", s, p, err)
	}
	if p.T != ts || !sameFloat(p.V, v) {
		t.Fatalf("%q: fast path read %d %v, the byte-by-byte reader %d %v", s, p.T, p.V, ts, v)
	}
	return true
}

func TestFastPair(t *testing.T) {
	for _, c := range []struct {
		in   string
		fast bool
	}{
		{`[1794003900,"68719476736"]`, true},
		{` [ 1794003900.5 , "0.1" ] ,`, true},
		{`[1.123456,"-0"]`, true},
		{`[0,"-12.5"]`, true},
		{`[1,"NaN"]`, true},
		{`[1,"+Inf"]`, true},
		{`[1,"-Inf"]`, true},
		{`[1,"3.3333333333333335"]`, true}, // past 2^53: strconv
		{`[1,"1e400"]`, false},             // out of range
		{`[1,"1.7976931348623157e308"]`, true},
		{`[1,"9007199254740993"]`, true}, // 2^53+1: strconv rounds it
		{`[1,"x"]`, false},
		{`[1,"\u0031"]`, false}, // an escape: byte by byte
		{`[1e3,"1"]`, false},    // an exponent in the time
		{`[-1.5,"1"]`, false},   // a negative time
		{`[01,"1"]`, false},     // not JSON
		{`[1.,"1"]`, false},
		{`[1,2]`, false},
		{`[1,"1"`, false}, // cut short: the rest is in the next read
		{`[1,"1`, false},
		{`[1234567890123456,"1"]`, false}, // 16 digits of seconds
	} {
		if got := checkFastPair(t, c.in); got != c.fast {
			t.Errorf("%q: fast path %v, want %v", c.in, got, c.fast)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "0.1", "0.3", "123.456", "68719476736", "9007199254740992",
		"0.00000001", "1234567.891", "00.5", "-99999.99999"} {
		got, ok := parseDecimal([]byte(s))
		if !ok {
			t.Errorf("%q: not read", s)
			continue
		}
		want, _ := strconv.ParseFloat(s, 64)
		if !sameFloat(got, want) {
			t.Errorf("%q: %v, strconv %v", s, got, want)
		}
	}
	for _, s := range []string{"", "-", ".5", "5.", "1e3", "NaN", "+1", "1.2.3", "9007199254740993", "0.00000000000000000000001", "12345678901234567890"} {
		if v, ok := parseDecimal([]byte(s)); ok {
			t.Errorf("%q: read as %v, want it left to strconv", s, v)
		}
	}
}

// FuzzDecimal: what parseDecimal reads, strconv.ParseFloat reads to the
// same float64.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0", "0.1", "68719476736", "9007199254740992", "1.5e3", "123.4567890123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseDecimal([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || !sameFloat(got, want) {
			t.Fatalf("%q: %v, strconv %v (%v)", s, got, want, err)
		}
	})
}

// FuzzFastPair: what fastPair reads, the byte-by-byte reader reads to the
// same point.
func FuzzFastPair(f *testing.F) {
	for _, s := range []string{`[1794003900,"68719476736"]`, `[1.5,"NaN"]`, ` [ 2.0001 , "-0.25" ]`, `[1,"1e3"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkFastPair(t, s) })
}
