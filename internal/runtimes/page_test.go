package runtimes

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The page reader is held to Prometheus' own text parser (expfmt), which
// the scrape used before and which this test alone links now: on what
// that parser accepts, the same families, members, values, counts and
// sums, and the same readings.

// expfmtPage parses a page as the scrape did with expfmt (OpenMetrics'
// "# UNIT" and "# EOF" lines dropped first, as it did) and turns the
// families into a Page. Empty label values are dropped, as the exposition
// formats mean no label by them.
func expfmtPage(body []byte) (Page, error) {
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter(body, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("# UNIT ")) && !bytes.HasPrefix(l, []byte("# EOF")) {
			b.Write(l)
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&b)
	if err != nil {
		return nil, err
	}
	out := Page{}
	for name, f := range fams {
		fam := &family{}
		switch f.GetType() {
		case dto.MetricType_SUMMARY:
			fam.kind = summaryFamily
		case dto.MetricType_HISTOGRAM:
			fam.kind = histogramFamily
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				if lp.GetValue() != "" {
					l[lp.GetName()] = lp.GetValue()
				}
			}
			mb := &member{labels: l}
			switch {
			case m.Summary != nil:
				mb.count, mb.sum = float64(m.GetSummary().GetSampleCount()), m.GetSummary().GetSampleSum()
			case m.Histogram != nil:
				mb.count, mb.sum = float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()
			case m.Counter != nil:
				mb.value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				mb.value = m.GetGauge().GetValue()
			case m.Untyped != nil:
				mb.value = m.GetUntyped().GetValue()
			}
			fam.members = append(fam.members, mb)
		}
		out[name] = fam
	}
	return out, nil
}

// describe writes a page's content in a form to compare: families sorted,
// members in order, floats by their bits.
func describe(p Page) map[string][]string {
	out := map[string][]string{}
	for name, f := range p {
		var ms []string
		for _, m := range f.members {
			ms = append(ms, fmt.Sprintf("%d %s %x %x %x", f.kind, key(m.labels), math.Float64bits(m.value), math.Float64bits(m.count), math.Float64bits(m.sum)))
		}
		out[name] = ms
	}
	return out
}

// samePageAsExpfmt compares the two readers on body; a page expfmt
// refuses is skipped and reported false.
func samePageAsExpfmt(t *testing.T, what string, body []byte) bool {
	t.Helper()
	want, err := expfmtPage(body)
	if err != nil {
		return false
	}
	// An empty label value is no label here, and a label of its own in
	// expfmt: {a=""} and {} are one member of a summary or histogram
	// here, two there. Exporters write one or the other, not both.
	if bytes.Contains(body, []byte(`=""`)) {
		for _, f := range want {
			if f.kind != plainFamily {
				return false
			}
		}
	}
	got, err := ParsePage(body)
	if err != nil {
		t.Fatalf("%s: expfmt reads the page, ours fails: %v", what, err)
	}
	// Counts of a value expfmt cannot hold as an integer are not
	// compared: it converts them to uint64, whose result Go leaves to the
	// machine for negative and non-finite values.
	for _, f := range got {
		for _, m := range f.members {
			if !(m.count >= 0 && m.count < math.MaxUint64) {
				return false
			}
		}
	}
	if g, w := describe(got), describe(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: pages differ:\nours    %v\nexpfmt  %v", what, g, w)
	}
	rg, okG := Normalize(got, "u")
	rw, okW := Normalize(want, "u")
	if okG != okW || (okG && !reflect.DeepEqual(rg.Metrics(), rw.Metrics())) {
		t.Fatalf("%s: readings differ", what)
	}
	return true
}

// pageCases are pages of what the grouping has to get right.
var pageCases = []string{
	"# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 3.5\ns_count 7\n",
	"# TYPE s summary\ns_sum{a=\"x\"} 1\ns_count{a=\"x\"} 2\ns_sum{a=\"y\"} 3\ns_count{a=\"y\"} 4\n",
	"s_sum 1\ns_count 2\n",
	"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.5\nh_count 2\n",
	"# TYPE h histogram\nh_bucket{le=\"1\"} 1\n",
	"# TYPE s summary\ns_bucket 1\n",
	"# TYPE c counter\nc_total 5\nc_created 1.7e9\n",
	"# TYPE g gauge\ng{a=\"\"} 1\ng{b=\"2\"} NaN\ng +Inf\n",
	"# HELP x help with \\\\ escapes\n# TYPE x untyped\nx 1 1700000000000\n",
	"# TYPE x_count gauge\nx_count 3\n# TYPE x summary\nx_sum 1\n",
	"# TYPE jvm summary\njvm_count{gc=\"G1\"} 2.9\njvm_sum{gc=\"G1\"} 1\n",
	"a{b=\"c\",d=\"e\"} -1.5e-3\n",
	"{\"go.x\",a=\"b\"} 1\n",
	"# TYPE go_gc_duration_seconds summary\n# UNIT go_gc_duration_seconds seconds\ngo_gc_duration_seconds{quantile=\"0\"} 1e-05\ngo_gc_duration_seconds_sum 0.5\ngo_gc_duration_seconds_count 12\n# EOF\n",
}

func TestParsePageMatchesExpfmt(t *testing.T) {
	pages, err := filepath.Glob("testdata/pages/*.prom")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages: %v", err)
	}
	for _, path := range pages {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !samePageAsExpfmt(t, path, b) {
			t.Errorf("%s: expfmt does not read the page", path)
		}
		if !samePageAsExpfmt(t, path+" (runtime series only)", runtimeSeries(b)) {
			t.Errorf("%s: expfmt does not read the runtime series of the page", path)
		}
	}
	for _, c := range pageCases {
		if !samePageAsExpfmt(t, fmt.Sprintf("%q", c), []byte(c)) {
			t.Errorf("%q: expfmt does not read the page", c)
		}
	}
}

func FuzzParsePage(f *testing.F) {
	for _, c := range pageCases {
		f.Add([]byte(c))
	}
	b, err := os.ReadFile("testdata/pages/jvm-micrometer-names.prom")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		// A line that starts with a brace names its metric inside (the
		// UTF-8 names of Prometheus 3): both read {"name",a="b"}, and
		// expfmt reads a bare {name} too, which no client writes and this
		// reader refuses. Such pages are left out.
		for _, l := range bytes.Split(b, []byte("\n")) {
			if l = bytes.TrimLeft(l, " \t"); len(l) > 0 && l[0] == '{' {
				return
			}
		}
		samePageAsExpfmt(t, "fuzz", b)
	})
}

// Lines may end in CRLF (expfmt refuses them; a Windows exporter's page
// is still read).
func TestParsePageCRLF(t *testing.T) {
	p, err := ParsePage([]byte("# TYPE go_goroutines gauge\r\ngo_goroutines{a=\"b\"} 7\r\n"))
	if err != nil || p["go_goroutines"] == nil || len(p["go_goroutines"].members) != 1 ||
		p["go_goroutines"].members[0].value != 7 || p["go_goroutines"].members[0].labels["a"] != "b" {
		t.Fatalf("%v, %v", describe(p), err)
	}
}
