package html

// An inspector for rendered reports: parses the HTML into a tree and reads
// back the charts, their drawn series and legends, so tests can check each
// chart against the data it claims to show.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/sample"
)

type node struct {
	tag    string
	attr   map[string]string
	kids   []*node
	text   strings.Builder
	parent *node
}

func (n *node) all(pred func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(m *node) {
		if pred(m) {
			out = append(out, m)
		}
		for _, k := range m.kids {
			walk(k)
		}
	}
	walk(n)
	return out
}

func (n *node) tagged(tag string) []*node {
	return n.all(func(m *node) bool { return m.tag == tag })
}

func (n *node) hasClass(c string) bool {
	for _, f := range strings.Fields(n.attr["class"]) {
		if f == c {
			return true
		}
	}
	return false
}

// textContent is the node's text, descendants included.
func (n *node) textContent() string {
	var b strings.Builder
	var walk func(*node)
	walk = func(m *node) {
		b.WriteString(m.text.String())
		for _, k := range m.kids {
			walk(k)
		}
	}
	walk(n)
	return b.String()
}

// parseHTML reads the page as lenient XML (every element the template
// writes is closed or void).
func parseHTML(t testing.TB, page []byte) *node {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	root := &node{tag: "#root", attr: map[string]string{}}
	cur := root
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the page does not parse: %v", err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			n := &node{tag: v.Name.Local, attr: map[string]string{}, parent: cur}
			for _, a := range v.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			cur.kids = append(cur.kids, n)
			cur = n
		case xml.EndElement:
			if cur.parent != nil {
				cur = cur.parent
			}
		case xml.CharData:
			cur.text.Write(v)
		}
	}
	return root
}

// drawn is one path or area read back from a chart.
type drawn struct {
	expr, axis         string
	points             int
	min, max           float64
	first, last        int64
	vertices           int
	xs, ys             []float64
	area               bool
	subpaths           int
	chartFrom, chartTo int64
	buckets            int
}

var cmdRE = regexp.MustCompile(`([MLZ])([-0-9.]+),([-0-9.]+)|Z`)

func readDrawn(t testing.TB, fig *node) []drawn {
	t.Helper()
	from, _ := strconv.ParseInt(fig.attr["data-from"], 10, 64)
	to, _ := strconv.ParseInt(fig.attr["data-to"], 10, 64)
	nb, _ := strconv.Atoi(fig.attr["data-buckets"])
	var out []drawn
	for _, p := range fig.tagged("path") {
		d := drawn{expr: p.attr["data-series"], axis: p.attr["data-axis"], area: p.hasClass("area"),
			chartFrom: from, chartTo: to, buckets: nb}
		d.points, _ = strconv.Atoi(p.attr["data-points"])
		d.min, _ = strconv.ParseFloat(p.attr["data-min"], 64)
		d.max, _ = strconv.ParseFloat(p.attr["data-max"], 64)
		d.first, _ = strconv.ParseInt(p.attr["data-first"], 10, 64)
		d.last, _ = strconv.ParseInt(p.attr["data-last"], 10, 64)
		for _, m := range cmdRE.FindAllStringSubmatch(p.attr["d"], -1) {
			if m[0] == "Z" {
				continue
			}
			if m[1] == "M" {
				d.subpaths++
			}
			x, _ := strconv.ParseFloat(m[2], 64)
			y, _ := strconv.ParseFloat(m[3], 64)
			d.xs, d.ys = append(d.xs, x), append(d.ys, y)
			d.vertices++
		}
		out = append(out, d)
	}
	return out
}

// resolve computes, independently of the renderer, the values a drawn
// expression claims to show.
func resolve(t testing.TB, w *sample.Window, expr string) []sample.Point {
	t.Helper()
	rate := func(ps []sample.Point) []sample.Point {
		var out []sample.Point
		for i := 1; i < len(ps); i++ {
			d := ps[i].V - ps[i-1].V
			if d < 0 {
				d = ps[i].V
			}
			out = append(out, sample.Point{T: ps[i].T, V: d / (float64(ps[i].T-ps[i-1].T) / 1000)})
		}
		return out
	}
	byKey := func(key string) *sample.Series {
		for _, s := range w.Series {
			if s.Key() == key {
				return s
			}
		}
		t.Fatalf("%s: no such series in the data", key)
		return nil
	}
	sumRates := func(ss []*sample.Series, div float64) []sample.Point {
		if len(ss) == 0 {
			t.Fatalf("%s: no matching series", expr)
		}
		sum := map[int64]float64{}
		var order []int64
		for i, s := range ss {
			for _, p := range rate(s.Points) {
				if i == 0 {
					order = append(order, p.T)
				}
				sum[p.T] += p.V
			}
		}
		out := make([]sample.Point, 0, len(order))
		for _, ts := range order {
			out = append(out, sample.Point{T: ts, V: sum[ts] / div})
		}
		return out
	}
	switch {
	case expr == "sum(rate(node_vmstat_allocstall*))":
		var ss []*sample.Series
		for _, s := range w.Series {
			if strings.HasPrefix(s.Name, "node_vmstat_allocstall") {
				ss = append(ss, s)
			}
		}
		return sumRates(ss, 1)
	case strings.HasPrefix(expr, "sum(rate(node_cpu_seconds_total{mode="):
		m := regexp.MustCompile(`mode="(\w+)"\}\)\)/(\d+)$`).FindStringSubmatch(expr)
		if m == nil {
			t.Fatalf("unexpected expression %s", expr)
		}
		n, _ := strconv.Atoi(m[2])
		return sumRates(w.Select("node_cpu_seconds_total", "mode", m[1]), float64(n))
	case strings.HasPrefix(expr, "rate(") && strings.HasSuffix(expr, ")"):
		return rate(byKey(expr[5 : len(expr)-1]).Points)
	}
	return byKey(expr).Points
}

// checkChart checks every drawn series of a chart against the data: the
// bucket count, the extent of the values, the first and last time, that
// the path's vertices are 1 or 2 per bucket inside the plot, and that the
// legend names exactly the drawn series.
func checkChart(t *testing.T, w *sample.Window, fig *node) {
	t.Helper()
	id := fig.attr["data-chart"]
	ds := readDrawn(t, fig)
	if len(ds) == 0 {
		t.Errorf("chart %s draws nothing", id)
		return
	}
	legend := map[string]bool{}
	for _, li := range fig.tagged("li") {
		if !strings.Contains(li.textContent(), "no data in range") {
			legend[li.attr["data-series"]] = true
		}
	}
	svg := fig.tagged("svg")[0]
	vb := strings.Fields(svg.attr["viewBox"])
	vw, _ := strconv.ParseFloat(vb[2], 64)
	vh, _ := strconv.ParseFloat(vb[3], 64)
	for _, d := range ds {
		if !legend[d.expr] {
			t.Errorf("chart %s: %s drawn but not in the legend", id, d.expr)
		}
		delete(legend, d.expr)
		ps := resolve(t, w, d.expr)
		buckets := map[int]bool{}
		lo, hi := math.Inf(1), math.Inf(-1)
		var first, last int64 = -1, -1
		for _, p := range ps {
			if p.T < d.chartFrom || p.T > d.chartTo {
				continue
			}
			b := int(float64(p.T-d.chartFrom) / float64(d.chartTo-d.chartFrom) * float64(d.buckets))
			buckets[min(b, d.buckets-1)] = true
			lo, hi = math.Min(lo, p.V), math.Max(hi, p.V)
			if first < 0 {
				first = p.T
			}
			last = p.T
		}
		if d.points != len(buckets) {
			t.Errorf("chart %s, %s: %d buckets drawn, the data fills %d", id, d.expr, d.points, len(buckets))
		}
		if d.first != first || d.last != last {
			t.Errorf("chart %s, %s: drawn from %d to %d, the data spans %d to %d", id, d.expr, d.first, d.last, first, last)
		}
		if d.area {
			// Areas draw bucket means: inside the data's extent.
			if d.min < lo-1e-6*math.Abs(lo) || d.max > hi+1e-6*math.Abs(hi) {
				t.Errorf("chart %s, %s: area extent [%g, %g] outside the data's [%g, %g]", id, d.expr, d.min, d.max, lo, hi)
			}
			if d.vertices != 2*d.points {
				t.Errorf("chart %s, %s: area has %d vertices, want 2 per bucket (%d)", id, d.expr, d.vertices, 2*d.points)
			}
		} else {
			if !near(d.min, lo) || !near(d.max, hi) {
				t.Errorf("chart %s, %s: drawn extent [%g, %g], the data's is [%g, %g]", id, d.expr, d.min, d.max, lo, hi)
			}
			if d.vertices < d.points || d.vertices > 2*d.points {
				t.Errorf("chart %s, %s: %d vertices for %d buckets", id, d.expr, d.vertices, d.points)
			}
		}
		for i := range d.xs {
			if d.xs[i] < 0 || d.xs[i] > vw || d.ys[i] < 0 || d.ys[i] > vh {
				t.Errorf("chart %s, %s: vertex (%g, %g) outside the viewBox", id, d.expr, d.xs[i], d.ys[i])
				break
			}
		}
	}
	for e := range legend {
		t.Errorf("chart %s: legend names %s, which is not drawn", id, e)
	}
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-5*math.Max(math.Abs(a), math.Abs(b))+1e-12
}
