package source

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// realSnapshots collects the real captures, one snapshot each, an hour apart.
func realSnapshots(t testing.TB) []*sample.Snapshot {
	t.Helper()
	var out []*sample.Snapshot
	base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for i, name := range []string{"healthy", "dying-cgroups", "low-available", "malloc-arenas"} {
		fsys, prov, err := capture.LoadFile(filepath.Join(captures, name+"-6.18-x86_64-hybrid.txtar"))
		if err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Hour)
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		res, err := collect.Collect(pfs, collect.Options{TopProcesses: 5, TopCgroups: 5, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &res.Snapshot)
	}
	return out
}

// writeOpenMetrics writes snapshots as OpenMetrics with second timestamps.
// Family-major is the order OpenMetrics requires (every sample of a family
// together, here series by series); otherwise snapshot by snapshot.
func writeOpenMetrics(w io.Writer, snapshots map[string][]*sample.Snapshot, familyMajor bool) {
	ts := func(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64) }
	line := func(inst string, m sample.Metric, t time.Time) {
		ls := append(sample.Labels{{Name: "instance", Value: inst}}, m.Labels...)
		fmt.Fprintf(w, "%s%s %s %s\n", m.Name, sample.L(flat(ls)...).String(), strconv.FormatFloat(m.Value, 'g', -1, 64), ts(t))
	}
	insts := make([]string, 0, len(snapshots))
	for in := range snapshots {
		insts = append(insts, in)
	}
	slices.Sort(insts)
	if !familyMajor {
		for _, in := range insts {
			for _, s := range snapshots[in] {
				for _, m := range s.Metrics {
					line(in, m, s.Time)
				}
			}
		}
		fmt.Fprintln(w, "# EOF")
		return
	}
	type key struct{ inst, series string }
	var order []key
	byFamily := map[string][]key{}
	vals := map[key][]sample.Point{}
	metric := map[key]sample.Metric{}
	for _, in := range insts {
		for _, s := range snapshots[in] {
			for _, m := range s.Metrics {
				k := key{in, m.Key()}
				if _, ok := vals[k]; !ok {
					order = append(order, k)
					byFamily[family(m.Name)] = append(byFamily[family(m.Name)], k)
					metric[k] = m
				}
				vals[k] = append(vals[k], sample.Point{T: s.Time.UnixMilli(), V: m.Value})
			}
		}
	}
	done := map[string]bool{}
	for _, k := range order {
		f := family(metric[k].Name)
		if done[f] {
			continue
		}
		done[f] = true
		typ := "unknown"
		switch sample.Describe(metric[k].Name).Kind {
		case sample.Gauge:
			typ = "gauge"
		case sample.Counter:
			if strings.HasSuffix(metric[k].Name, "_total") {
				typ = "counter"
			}
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f, sample.Describe(metric[k].Name).Help, f, typ)
		for _, k := range byFamily[f] {
			for _, p := range vals[k] {
				m := metric[k]
				m.Value = p.V
				line(k.inst, m, time.UnixMilli(p.T))
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
}

func family(name string) string {
	if f, ok := strings.CutSuffix(name, "_total"); ok && sample.Describe(name).Kind == sample.Counter {
		return f
	}
	return name
}

func flat(ls sample.Labels) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name, l.Value)
	}
	return out
}

// sameSnapshots compares snapshots by series key and value (order free).
func sameSnapshots(t *testing.T, inst string, got, want []*sample.Snapshot) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d scrapes, want %d", inst, len(got), len(want))
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) {
			t.Errorf("%s scrape %d: time %s, want %s", inst, i, got[i].Time, want[i].Time)
		}
		g, w := byKey(got[i]), byKey(want[i])
		if len(g) != len(w) {
			t.Errorf("%s scrape %d: %d series, want %d", inst, i, len(g), len(w))
		}
		bad := 0
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !(gv == wv || (math.IsNaN(gv) && math.IsNaN(wv))) {
				if bad++; bad <= 5 {
					t.Errorf("%s scrape %d: %s = %v (present %v), want %v", inst, i, k, gv, ok, wv)
				}
			}
		}
	}
}

func byKey(s *sample.Snapshot) map[string]float64 {
	m := map[string]float64{}
	for _, x := range s.Metrics {
		m[x.Key()] = x.Value
	}
	return m
}

// Real collections written as OpenMetrics, in both orders and compressed or
// not, read back exactly.
func TestTextRoundTrip(t *testing.T) {
	t.Parallel()
	reals := realSnapshots(t)
	in := map[string][]*sample.Snapshot{"web-1": reals[:2], "db-1": reals[2:]}
	for _, familyMajor := range []bool{true, false} {
		for _, gz := range []bool{false, true} {
			for _, buf := range []int{0, 100} { // 100: write out early whenever the order allows
				t.Run(fmt.Sprintf("family=%v/gz=%v/buffer=%d", familyMajor, gz, buf), func(t *testing.T) {
					t.Parallel()
					var b bytes.Buffer
					writeOpenMetrics(&b, in, familyMajor)
					data := b.Bytes()
					name := "dump.om"
					if gz {
						var z bytes.Buffer
						zw := gzip.NewWriter(&z)
						zw.Write(data)
						zw.Close()
						data, name = z.Bytes(), "dump.om.gz"
					}
					p := writeFile(t, t.TempDir(), name, string(data))
					if k, err := Detect(p); err != nil || k != KindOpenMetrics {
						t.Fatalf("Detect = %v, %v", k, err)
					}
					ms := newMemSink(t)
					st, err := Read(p, IngestOptions{BufferSamples: buf}, ms.sink)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := st.Instances, []string{"db-1", "web-1"}; !slices.Equal(got, want) {
						t.Errorf("instances %v, want %v", got, want)
					}
					for inst, want := range in {
						sameSnapshots(t, inst, ms.snapshots[inst], want)
					}
					if st.Skipped != 0 || len(st.Notes) != 0 {
						t.Errorf("skipped %d, notes %v", st.Skipped, st.Notes)
					}
					if !familyMajor && buf > 0 && ms.calls < 3 {
						t.Errorf("%d appends: scrape-ordered input was not written out as it went", ms.calls)
					}
				})
			}
		}
	}
}

func TestTextFormats(t *testing.T) {
	t.Parallel()
	const t0 = 1700000000
	for _, tc := range []struct {
		name, in string
		want     []string // instance time(s) key=value, sorted
		notes    int
	}{
		{"prometheus ms", "# HELP a x\n# TYPE a gauge\na{x=\"1\"} 1.5 1700000000000\na{x=\"1\"} 2 1700000060000\n",
			[]string{`f 1700000000 a{x="1"}=1.5`, `f 1700000060 a{x="1"}=2`}, 0},
		{"openmetrics seconds", "# TYPE c counter\nc_total 3 1700000000.250\n# EOF\n",
			[]string{`f 1700000000.25 c_total=3`}, 0},
		{"unknown type, instance, escapes, CRLF", "# TYPE u unknown\r\nu{instance=\"h:9100\",p=\"a\\\\b\\\"c\\nd\"} 1 1700000000\r\n# EOF\r\n",
			[]string{`h:9100 1700000000 u{p="a\\b\"c\nd"}=1`}, 0},
		{"quoted utf-8 names", "{\"my.metric\",\"label.x\"=\"v\"} 7 1700000000\n",
			[]string{`f 1700000000 my.metric{label.x="v"}=7`}, 0},
		{"promtool dump", "{__name__=\"node_load1\", instance=\"a\", job=\"node\"} 0.5 1700000000000\n",
			[]string{`a 1700000000 node_load1{job="node"}=0.5`}, 0},
		{"go escapes", "a{x=\"t\\tx\\x41\\u00e9z\"} 1 1700000000\n",
			[]string{"f 1700000000 a{x=\"t\tx" + "A\u00e9z\"}=1"}, 0},
		{"special values, exemplar, blanks", "x NaN 1700000000\ny +Inf 1700000000 # {trace=\"1\"} 2 1700000000\nz\t-1e3\t1700000000\n\n",
			// NaN and +Inf parse, but are dropped with one note: no size
			// or counter memdoctor judges can be either.
			[]string{`f 1700000000 z=-1000`}, 1},
		{"empty label value is no label, trailing comma", "a{x=\"\",y=\"1\",} 1 1700000000\n",
			[]string{`f 1700000000 a{y="1"}=1`}, 0},
		{"duplicate: last wins", "a 1 1700000000\na 2 1700000000\n",
			[]string{`f 1700000000 a=2`}, 1},
		{"concatenated dumps", "a 1 1700000000\n# EOF\na 2 1700000060\n# EOF\n",
			[]string{`f 1700000000 a=1`, `f 1700000060 a=2`}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, t.TempDir(), "f.prom", tc.in)
			ms := newMemSink(t)
			st, err := Read(p, IngestOptions{}, ms.sink)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for inst, ss := range ms.snapshots {
				for _, s := range ss {
					for _, m := range s.Metrics {
						ts := strconv.FormatFloat(float64(s.Time.UnixMilli())/1000, 'f', -1, 64)
						got = append(got, fmt.Sprintf("%s %s %s=%s", inst, ts, m.Key(), strconv.FormatFloat(m.Value, 'g', -1, 64)))
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(st.Notes) != tc.notes {
				t.Errorf("notes %v, want %d", st.Notes, tc.notes)
			}
			_ = t0
		})
	}
}

// Samples without a timestamp take the file's modification time.
func TestTextNoTimestamp(t *testing.T) {
	t.Parallel()
	p := writeFile(t, t.TempDir(), "scrape.txt", "# TYPE node_load1 gauge\nnode_load1 0.25\n")
	mt := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	ms := newMemSink(t)
	st, err := Read(p, IngestOptions{}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	ss := ms.snapshots["scrape"]
	if len(ss) != 1 || !ss[0].Time.Equal(mt) || ss[0].Value("node_load1") != 0.25 {
		t.Fatalf("scrapes %v, want one at %s", ss, mt)
	}
	if len(st.Notes) != 1 || !strings.Contains(st.Notes[0].Message, "no timestamp") {
		t.Errorf("notes %v", st.Notes)
	}
}

func TestTextMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		line     int
		want     string
	}{
		{"cut mid-line", "a 1 1700000000\na 2 17000", 2, "ends in the middle of a line"},
		{"no # EOF at the end", "a 1 1700000000\n# EOF\na 2 1700000060\n", 3, "does not end with \"# EOF\""},
		{"bad value", "a 1 1700000000\nb one 1700000000\n", 2, `bad value "one"`},
		{"bad timestamp", "a 1 17000000x0\n", 1, `bad timestamp "17000000x0"`},
		{"text after timestamp", "a 1 1700000000 extra\n", 1, "after the timestamp"},
		{"unterminated value", "a{x=\"1} 1 1700000000\n", 1, "unterminated label value"},
		{"no brace", "a{x=\"1\" 1 1700000000\n", 1, "no closing brace"},
		{"bad escape", "a{x=\"\\q\"} 1 1700000000\n", 1, `invalid escape \q`},
		{"label twice", "a{x=\"1\",x=\"2\"} 1 1700000000\n", 1, `label "x" given twice`},
		{"no value", "a{x=\"1\"}\n", 1, "no value"},
		{"digit name", "1a 1 1700000000\n", 1, "starts with a digit"},
		{"unquoted value", "a{x=1} 1 1700000000\n", 1, "not quoted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, t.TempDir(), "bad.prom", tc.in)
			_, err := Read(p, IngestOptions{}, newMemSink(t).sink)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v, want an InputError", err)
			}
			if ie.File != p || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrMalformed) {
				t.Errorf("error %q (file %s line %d), want %s line %d: %s", err, ie.File, ie.Line, p, tc.line, tc.want)
			}
			// Lenient: the bad line is skipped, counted in a note.
			ms := newMemSink(t)
			st, err := Read(p, IngestOptions{Lenient: true}, ms.sink)
			if err != nil {
				t.Fatalf("lenient: %v", err)
			}
			skipped := 1
			if tc.name == "no # EOF at the end" {
				skipped = 0 // every line is good; the note says the end may be missing
			}
			if st.Skipped != skipped || len(st.Notes) != 1 || !strings.Contains(st.Notes[0].Message, fmt.Sprintf("line %d", tc.line)) {
				t.Errorf("lenient: skipped %d, notes %v", st.Skipped, st.Notes)
			}
		})
	}
}

func TestTextTruncatedGzip(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	writeOpenMetrics(&b, map[string][]*sample.Snapshot{"h": realSnapshots(t)}, true)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b.Bytes())
	zw.Close()
	p := writeFile(t, t.TempDir(), "cut.om.gz", string(z.Bytes()[:z.Len()/2]))
	_, err := Read(p, IngestOptions{}, newMemSink(t).sink)
	var ie *InputError
	if !errors.As(err, &ie) || ie.File != p || ie.Line == 0 || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("error %v, want the file, a line and 'cut short'", err)
	}
}

// Input not in time order that overflows the buffer after a part was
// written cannot be stored: a clear error, not a store failure.
func TestTextOutOfOrderAfterFlush(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "a 1 %d\nb 1 %d\n", 1700000000+i, 1700000000+i)
	}
	b.WriteString("c 1 1700000001\n")
	p := writeFile(t, t.TempDir(), "f.prom", b.String())
	_, err := Read(p, IngestOptions{BufferSamples: 10}, newMemSink(t).sink)
	var ie *InputError
	if !errors.As(err, &ie) || ie.Line != 101 || !strings.Contains(err.Error(), "not in time order") {
		t.Fatalf("error %v, want line 101 not in time order", err)
	}
	// With the default buffer the same file loads.
	ms := newMemSink(t)
	if _, err := Read(p, IngestOptions{}, ms.sink); err != nil {
		t.Fatal(err)
	}
	if got := ms.snapshots["f"][1].Value("c"); got != 1 {
		t.Errorf("c at the second scrape = %v, want 1", got)
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cron := filepath.Join(dir, "cron")
	writeFile(t, cron, "2020-01-31/meminfo_2020-01-31.10:05", "MemTotal: 1 kB\n")
	caps := filepath.Join(dir, "caps")
	data, err := os.ReadFile(filepath.Join(captures, "healthy-6.18-x86_64-hybrid.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, caps, "a.txtar", string(data))
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct {
		path string
		want Kind
		err  string
	}{
		{writeFile(t, dir, "s.db", "SQLite format 3\x00rest"), KindStore, ""},
		{cron, KindCron, ""},
		{caps, KindCaptures, ""},
		{filepath.Join(caps, "a.txtar"), KindCaptures, ""},
		{writeFile(t, dir, "m.prom", "# HELP a b\n# TYPE a gauge\na 1 1700000000\n"), KindOpenMetrics, ""},
		{writeFile(t, dir, "garbage", "MemTotal:       24684092 kB\n"), KindUnknown, "garbage: unrecognised input: want a memdoctor store file"},
		{writeFile(t, dir, "bin", "\x00\x01\x02"), KindUnknown, "binary data"},
		{writeFile(t, dir, "nothing", ""), KindUnknown, "no metric lines"},
		{empty, KindUnknown, "without cron-saved /proc files or capture archives"},
		{filepath.Join(dir, "missing"), KindUnknown, "no such file"},
	} {
		k, err := Detect(tc.path)
		if k != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Detect(%s) = %v, %v; want %v, %q", filepath.Base(tc.path), k, err, tc.want, tc.err)
		}
	}
}

// A file of many snapshots of many series, about 100 MB of text.
func BenchmarkTextRead(b *testing.B) {
	reals := realSnapshots(b)
	var buf bytes.Buffer
	in := map[string][]*sample.Snapshot{}
	for i := range 200 {
		s := *reals[i%len(reals)]
		s.Time = time.Unix(1700000000+int64(i)*60, 0)
		in["h"] = append(in["h"], &s)
	}
	writeOpenMetrics(&buf, in, true)
	p := filepath.Join(b.TempDir(), "big.om")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for range b.N {
		var n int64
		st, err := Read(p, IngestOptions{}, func(_ string, ss []*sample.Snapshot) error {
			for _, s := range ss {
				n += int64(len(s.Metrics))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Samples)/b.Elapsed().Seconds()*float64(b.N), "samples/s")
	}
}
