package seriestest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// t0 is defaultStart in milliseconds.
const t0 = int64(1767225600000)

const minute = int64(60000)

// pts builds points at t0 + k·step for the values (int or float64); a nil
// value is a missing sample: its time slot passes without a point.
func pts(step int64, vals ...any) []sample.Point {
	var out []sample.Point
	for k, v := range vals {
		if v == nil {
			continue
		}
		var f float64
		switch x := v.(type) {
		case int:
			f = float64(x)
		case float64:
			f = x
		}
		out = append(out, sample.Point{T: t0 + int64(k)*step, V: f})
	}
	return out
}

func pt(t int64, v float64) sample.Point { return sample.Point{T: t, V: v} }

var cmpFloats = cmpopts.EquateNaNs()

func TestParseNotation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		line string // after "interval 1m"
		want []sample.Point
	}{
		{"explicit values", "m 0 0 5 9 9", pts(minute, 0, 0, 5, 9, 9)},
		{"a+bxn gives n+1 values", "m 1+2x3", pts(minute, 1, 3, 5, 7)},
		{"a-bxn decreasing", "m 10-2.5x2", pts(minute, 10, 7.5, 5)},
		{"a+bx0 is one value", "m 4+1x0", pts(minute, 4)},
		{"vxn repeats n+1 times", "m 7x2", pts(minute, 7, 7, 7)},
		{"v+0xn", "m 7+0x2", pts(minute, 7, 7, 7)},
		{"scientific", "m 8e9-1e6x2", pts(minute, 8e9, 8e9-1e6, 8e9-2e6)},
		{"exponent signs", "m 1e-3+2E+0x1 -1.5e+1", pts(minute, 0.001, 2.001, -15)},
		{"negative start", "m -5-3x2", pts(minute, -5, -8, -11)},
		{"exponent then operator", "m 1e5-3x1", pts(minute, 1e5, 1e5-3)},
		{"missing sample", "m 1 _ 3", pts(minute, 1, nil, 3)},
		{"_xn is n+1 missing", "m 1 _x2 5", pts(minute, 1, nil, nil, nil, 5)},
		{"segments concatenate", "m 100+50x2 _x1 2+0x1", pts(minute, 100, 150, 200, nil, nil, 2, 2)},
		{"Inf and NaN", "m Inf -Inf +Inf NaN", pts(minute, math.Inf(1), math.Inf(-1), math.Inf(1), math.NaN())},
		{"Inf repeated", "m Infx1 NaNx1", pts(minute, math.Inf(1), math.Inf(1), math.NaN(), math.NaN())},
		{"Inf step", "m 0+Infx2", pts(minute, 0, math.Inf(1), math.Inf(1))},
		{"Inf step, x0 is a", "m 1+Infx0", pts(minute, 1)},
		{"fractions", "m .5 1. 0.25+.25x1", pts(minute, 0.5, 1, 0.25, 0.5)},
		{"only missing", "m _x3", nil},
		{"tabs and trailing comment", "m\t1\t2 # three", pts(minute, 1, 2)},
	}
	for _, tt := range tests {
		w, err := Parse("interval 1m\n" + tt.line)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if len(w.Series) != 1 {
			t.Errorf("%s: %d series", tt.name, len(w.Series))
			continue
		}
		if diff := cmp.Diff(tt.want, w.Series[0].Points, cmpFloats, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: %q points (-want +got):\n%s", tt.name, tt.line, diff)
		}
	}
}

// a+k·b is computed by one multiplication per value, not by a running sum
// that would drift over a long run.
func TestParseLongRun(t *testing.T) {
	t.Parallel()
	w := MustParse(t, "interval 15s\nm 0.1+0.1x99999")
	ps := w.Series[0].Points
	if len(ps) != 100000 {
		t.Fatalf("%d points", len(ps))
	}
	a, b := 0.1, 0.1
	for k, p := range ps {
		if p.V != a+float64(k)*b || p.T != t0+int64(k)*15000 {
			t.Fatalf("point %d: %+v", k, p)
		}
	}
}

func TestParseWindow(t *testing.T) {
	t.Parallel()
	src := `
# Slab leak.
start 2026-03-01T12:00:00Z
instance host-1
interval 15m
node_memory_MemAvailable_bytes 8e9-1e6x3
node_memory_SUnreclaim_bytes _ 1e9+4e6x2 # starts one step late
node_cgroups_cgroups{subsys_name="memory"} 100+50x1 _x1 20000
node_cpu_seconds_total{mode="idle", cpu="0",} 1 2
weird{path="/a b#c", q="say \"hi\"\n"} 5
`
	w := MustParse(t, src)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s0 := start.UnixMilli()
	q := int64(15 * minute)
	if w.Instance != "host-1" || !w.From.Equal(start) || !w.To.Equal(start.Add(4*15*time.Minute)) || w.Step != 15*time.Minute {
		t.Errorf("window %q %v..%v step %v", w.Instance, w.From, w.To, w.Step)
	}
	if w.From.Location() != time.UTC {
		t.Errorf("From not in UTC: %v", w.From)
	}
	want := []*sample.Series{
		{Name: "node_memory_MemAvailable_bytes", Points: []sample.Point{pt(s0, 8e9), pt(s0+q, 8e9-1e6), pt(s0+2*q, 8e9-2e6), pt(s0+3*q, 8e9-3e6)}},
		{Name: "node_memory_SUnreclaim_bytes", Points: []sample.Point{pt(s0+q, 1e9), pt(s0+2*q, 1e9+4e6), pt(s0+3*q, 1e9+8e6)}},
		{Name: "node_cgroups_cgroups", Labels: sample.L("subsys_name", "memory"), Points: []sample.Point{pt(s0, 100), pt(s0+q, 150), pt(s0+4*q, 20000)}},
		{Name: "node_cpu_seconds_total", Labels: sample.L("mode", "idle", "cpu", "0"), Points: []sample.Point{pt(s0, 1), pt(s0+q, 2)}},
		{Name: "weird", Labels: sample.L("path", "/a b#c", "q", "say \"hi\"\n"), Points: []sample.Point{pt(s0, 5)}},
	}
	if diff := cmp.Diff(want, w.Series, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	if s := w.Get("node_cgroups_cgroups", "subsys_name", "memory"); s == nil || len(s.Points) != 3 {
		t.Errorf("Window.Get on the parsed window: %+v", s)
	}
}

func TestParseDefaultsAndSteps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		src      string
		from, to int64
		step     time.Duration
	}{
		{"default start", "interval 1m\na 1 2 3", t0, t0 + 2*minute, time.Minute},
		{"days", "interval 1d\na 1x2", t0, t0 + 2*86400000, 24 * time.Hour},
		{"days and hours", "interval 1d12h\na 1 2", t0, t0 + 36*3600000, 36 * time.Hour},
		{"weeks", "interval 1w\na 1 2", t0, t0 + 7*86400000, 7 * 24 * time.Hour},
		{"milliseconds", "interval 250ms\na 1 2", t0, t0 + 250, 250 * time.Millisecond},
		{"mixed intervals", "interval 1m\na 1 2\ninterval 2m\nb 1 2 3", t0, t0 + 4*minute, 0},
		{"same interval twice", "interval 1m\na 1 2\ninterval 60s\nb 1", t0, t0 + minute, time.Minute},
		{"interval changed after the last series", "interval 1m\na 1 2\ninterval 5m", t0, t0 + minute, time.Minute},
		{"From/To from the samples", "interval 1m\na _ 1\nb _x2 5 _x3", t0 + minute, t0 + 3*minute, time.Minute},
		{"no samples", "interval 1m\na _x3", t0, t0, time.Minute},
		{"empty input", "", t0, t0, 0},
		{"custom start with offset", "start 2026-01-01T02:00:00+02:00\ninterval 1h\na 1", t0, t0, time.Hour},
		{"CRLF", "interval 1m\r\na 1 2\r\n", t0, t0 + minute, time.Minute},
	}
	for _, tt := range tests {
		w, err := Parse(tt.src)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if w.From.UnixMilli() != tt.from || w.To.UnixMilli() != tt.to || w.Step != tt.step {
			t.Errorf("%s: From %d To %d Step %v; want %d %d %v", tt.name,
				w.From.UnixMilli()-t0, w.To.UnixMilli()-t0, w.Step, tt.from-t0, tt.to-t0, tt.step)
		}
	}
}

func TestParseNoise(t *testing.T) {
	t.Parallel()
	src := `interval 1m
noise a 5e9+0x999 seed=3 sd=1e7
noise b 5e9+0x999 sd=1e7 seed=3
noise c 5e9+0x999 seed=4 sd=1e7
noise d 1 _ 2 sd=0
noise e 5e9+0x9 sd=1e7
noise{} 1 2
`
	w := MustParse(t, src)
	a, b, c := w.Get("a").Points, w.Get("b").Points, w.Get("c").Points
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different noise:\n%s", diff)
	}
	var sum, sum2 float64
	same := 0
	for i, p := range a {
		d := p.V - 5e9
		sum += d
		sum2 += d * d
		if p.V == c[i].V {
			same++
		}
		if p.T != t0+int64(i)*minute {
			t.Fatalf("noise moved time: %+v", p)
		}
	}
	mean, sd := sum/1000, math.Sqrt(sum2/1000-(sum/1000)*(sum/1000))
	if math.Abs(mean) > 1e6 || sd < 0.9e7 || sd > 1.1e7 {
		t.Errorf("noise mean %g sd %g, want about 0 and 1e7", mean, sd)
	}
	if same > 0 {
		t.Errorf("seeds 3 and 4 agree on %d values", same)
	}
	if diff := cmp.Diff(pts(minute, 1, nil, 2), w.Get("d").Points); diff != "" {
		t.Errorf("sd=0 changed values:\n%s", diff)
	}
	// The default seed is 0: the same as seed=0.
	w2 := MustParse(t, "interval 1m\nnoise e 5e9+0x9 sd=1e7 seed=0")
	if diff := cmp.Diff(w2.Get("e").Points, w.Get("e").Points); diff != "" {
		t.Errorf("default seed is not 0:\n%s", diff)
	}
	if n := w.Get("noise"); n == nil || len(n.Points) != 2 || n.Points[1].V != 2 {
		t.Errorf("noise{} is a metric named noise: %+v", n)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src   string
		line  int
		token string
		msg   string // substring
	}{
		{"a 1 2", 1, "a", "no interval"},
		{"interval 1m\na 1 2 zz", 2, "zz", "not a value"},
		{"interval 1m\n\n# c\nb 1+x3", 4, "1+x3", "not a+bxn"},
		{"interval 1m\na 1+2x", 2, "1+2x", "count"},
		{"interval 1m\na 1+2x-1", 2, "1+2x-1", "count"},
		{"interval 1m\na 1+2x1.5", 2, "1+2x1.5", "count"},
		{"interval 1m\na 1+-2x3", 2, "1+-2x3", "b unsigned"},
		{"interval 1m\na 1++2x3", 2, "1++2x3", "b unsigned"},
		{"interval 1m\na 1x2x3", 2, "1x2x3", "count"},
		{"interval 1m\na ax3", 2, "ax3", "not a value"},
		{"interval 1m\na 0x1f", 2, "0x1f", "count"},
		{"interval 1m\na 1_000", 2, "1_000", "not a value"},
		{"interval 1m\na infinity", 2, "infinity", "not a value"},
		{"interval 1m\na -NaN", 2, "-NaN", "not a value"},
		{"interval 1m\na 1e400", 2, "1e400", "not a value"},
		{"interval 1m\na 1e", 2, "1e", "not a value"},
		{"interval 1m\na __x2", 2, "__x2", "not a value"},
		{"interval 1m\na", 2, "a", "without values"},
		{"interval 1m\na # only a comment", 2, "a", "without values"},
		{"interval 1m\na 1\na 2", 3, "a", "already defined on line 2"},
		{"interval 1m\na{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 2", 3, `a{x="1",y="2"}`, "already defined on line 2"},
		{"interval 1m\n5m 1", 2, "5m", "metric name"},
		{"interval 1m\nnoise 1 2", 2, "1", "metric name"},
		{"interval 1m\na-b 1", 2, "a-b", "bad character"},
		{"interval 1m\na{x=1} 1", 2, "1}", "quoted label value"},
		{"interval 1m\na{x=\"1\" y=\"2\"} 1", 2, `y="2"}`, ", or }"},
		{"interval 1m\na{x=\"1\"", 2, "end of line", ", or }"},
		{"interval 1m\na{x=\"1} 1", 2, `"1}`, "quoted label value"},
		{"interval 1m\na{x=\"\\t\"} 1", 2, `"\t"}`, "quoted label value"},
		{"interval 1m\na{x=\"1\",x=\"2\"} 1", 2, "x", "duplicate label"},
		{"interval 1m\na{1x=\"1\"} 1", 2, `1x="1"}`, "label name"},
		{"interval 1m\na{x:y=\"1\"} 1", 2, `:y="1"}`, "expected ="},
		{"interval 1m\na{x=\"1\"}1", 2, "1", "blank after"},
		{"interval 1m\na 1 sd=3", 2, "sd=3", "only for noise"},
		{"interval 1m\nnoise a 1 2", 2, "noise", "needs sd"},
		{"interval 1m\nnoise a 1 sd=-1", 2, "sd=-1", "non-negative"},
		{"interval 1m\nnoise a 1 sd=NaN", 2, "sd=NaN", "non-negative"},
		{"interval 1m\nnoise a 1 sd=Inf", 2, "sd=Inf", "finite"},
		{"interval 1m\nnoise a 1 sd=1 sd=2", 2, "sd=2", "twice"},
		{"interval 1m\nnoise a 1 sd=1 seed=x", 2, "seed=x", "integer"},
		{"interval 1m\nnoise a 1 sd=1 seed=-1", 2, "seed=-1", "integer"},
		{"interval 1m\nnoise a 1 sd=1 seed=1 seed=1", 2, "seed=1", "twice"},
		{"interval 1m\nnoise a 1 sd=1 mean=3", 2, "mean=3", "unknown option"},
		{"interval 1m\nnoise a 1 sd=1 2", 2, "2", "before the options"},
		{"interval", 1, "interval", "missing argument"},
		{"interval 1m 2m", 1, "2m", "unexpected argument"},
		{"interval 0s", 1, "0s", "positive"},
		{"interval -1m", 1, "-1m", "positive"},
		{"interval 1", 1, "1", "not a duration"},
		{"interval m", 1, "m", "not a duration"},
		// Days are whole, as in Prometheus (0.5d was 12h here, 0 in
		// memdoctor's flags): write 12h.
		{"interval 0.5d", 1, "0.5d", "not a duration"},
		{"interval 1.5ms", 1, "1.5ms", "whole number of milliseconds"},
		{"interval 999999999d", 1, "999999999d", "not a duration"},
		{"interval 2562047h2562047h", 1, "2562047h2562047h", "not a duration"},
		{"start", 1, "start", "missing argument"},
		{"start yesterday", 1, "yesterday", "RFC 3339"},
		{"start 2026-01-01", 1, "2026-01-01", "RFC 3339"},
		{"start 2026-01-01T00:00:00.0001Z", 1, "2026-01-01T00:00:00.0001Z", "milliseconds"},
		{"start 2026-01-01T00:00:00Z\nstart 2026-01-01T00:00:00Z", 2, "start", "twice"},
		{"interval 1m\na 1\nstart 2026-01-01T00:00:00Z", 3, "start", "before the first series"},
		{"instance\n", 1, "instance", "missing argument"},
		{"instance a\ninstance b", 2, "instance", "twice"},
		{"interval 1m\na 1x1048576", 2, "1x1048576", "more than"},
		{"interval 1m\na 1x1048575 2", 2, "2", "more than"},
		{"interval 1m\na 1x99999999999", 2, "1x99999999999", "count"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.src)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want *Error", tt.src, err)
			continue
		}
		if pe.Line != tt.line || pe.Token != tt.token || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("%q: got line %d token %q msg %q; want line %d token %q msg ~%q",
				tt.src, pe.Line, pe.Token, pe.Msg, tt.line, tt.token, tt.msg)
		}
		if s := err.Error(); !strings.Contains(s, "line ") || !strings.Contains(s, pe.Msg) {
			t.Errorf("%q: message %q", tt.src, s)
		}
	}
}

func TestParseTotalLimit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("interval 1s\n")
	for i := range 5 {
		b.WriteString("m")
		b.WriteByte(byte('a' + i))
		b.WriteString(" 0+1x1048575\n")
	}
	var pe *Error
	if _, err := Parse(b.String()); !errors.As(err, &pe) || pe.Line != 6 || !strings.Contains(pe.Msg, "in all") {
		t.Errorf("err = %v, want the total limit on line 6", err)
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	if got := (&Error{Line: 3, Token: "1+x", Msg: "bad"}).Error(); got != `seriestest: line 3: "1+x": bad` {
		t.Errorf("got %s", got)
	}
	if got := (&Error{Line: 3, Msg: "bad"}).Error(); got != `seriestest: line 3: bad` {
		t.Errorf("got %s", got)
	}
}

// The example of the package comment parses as described.
func TestPackageExample(t *testing.T) {
	t.Parallel()
	w := MustParse(t, `
# Slab leak: SUnreclaim grows 4 MB per 15 minutes for 5 days.
start 2026-01-01T00:00:00Z
interval 15m
node_memory_MemAvailable_bytes 8e9-1e6x479
node_memory_SUnreclaim_bytes 1e9+4e6x479
node_cgroups_cgroups{subsys_name="memory"} 100+50x200 _x10 20000+0x267
node_boot_time_seconds 1767225600x239 1767400000x239
node_vmstat_allocstall_normal 0 0 5 9 9
noise node_memory_Active_file_bytes 5e9+0x479 seed=3 sd=1e7
`)
	if len(w.Series) != 6 || w.Step != 15*time.Minute || !w.To.Equal(defaultStart.Add(479*15*time.Minute)) {
		t.Fatalf("%d series, step %v, To %v", len(w.Series), w.Step, w.To)
	}
	for _, s := range w.Series {
		if s.Name == "node_vmstat_allocstall_normal" {
			continue
		}
		want := 480
		if s.Name == "node_cgroups_cgroups" {
			want = 480 - 11
		}
		if len(s.Points) != want {
			t.Errorf("%s: %d points, want %d", s.Key(), len(s.Points), want)
		}
	}
	if p := w.Get("node_memory_SUnreclaim_bytes").Points[479]; p.V != 1e9+479*4e6 {
		t.Errorf("SUnreclaim last %v", p.V)
	}
}

type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.failed = fmt.Sprint(args...)
	panic(f)
}

func TestMustParseFails(t *testing.T) {
	t.Parallel()
	f := &fakeTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != f {
				panic(r)
			}
		}()
		MustParse(f, "interval 1m\nm 1 bad")
	}()
	if !strings.Contains(f.failed, `line 2: "bad"`) {
		t.Errorf("MustParse reported %q", f.failed)
	}
}
