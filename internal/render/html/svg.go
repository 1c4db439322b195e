package html

// Charts become inline SVG: every line is cut into one bucket per two
// pixels of plot width and drawn through each bucket's minimum and maximum
// (a spike of one sample stays visible however long the range); stacked
// areas use each bucket's mean. Each drawn element carries what it shows in
// data-* attributes: the expression, the number of buckets, the extent of
// the values and the time of the first and last point.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Geometry of a chart's viewBox.
const (
	svgW     = 800
	svgH     = 260
	padL     = 70
	padRAxis = 70
	padR     = 16
	padT     = 12
	padB     = 26
	// pxPerBucket is the display resolution: one min/max bucket per this
	// many viewBox units of plot width.
	pxPerBucket = 2
)

// bucket is the aggregate of the points falling into one display column.
type bucket struct {
	idx          int
	first, last  int64 // time of the first and last point
	lo, hi, mean float64
	sum          float64
	n            int
	lastV        float64
}

// Buckets returns the number of display buckets of a chart (with or
// without a right axis).
func Buckets(rightAxis bool) int {
	return plotWidth(rightAxis) / pxPerBucket
}

func plotWidth(rightAxis bool) int {
	if rightAxis {
		return svgW - padL - padRAxis
	}
	return svgW - padL - padR
}

// bucketize aggregates a line's points into n buckets over [from, to]
// (milliseconds); points outside are ignored. NaN values are skipped.
func bucketize(l *Line, from, to int64, n int) []bucket {
	if to <= from {
		to = from + 1
	}
	var out []bucket
	span := float64(to - from)
	for i, p := range l.Points {
		if p.T < from || p.T > to || math.IsNaN(p.V) {
			continue
		}
		b := int(float64(p.T-from) / span * float64(n))
		b = min(max(b, 0), n-1)
		lo, hi, mean := p.V, p.V, p.V
		if l.Min != nil && i < len(l.Min) {
			lo = l.Min[i]
		}
		if l.Max != nil && i < len(l.Max) {
			hi = l.Max[i]
		}
		if l.Mean != nil && i < len(l.Mean) {
			mean = l.Mean[i]
		}
		if len(out) == 0 || out[len(out)-1].idx != b {
			out = append(out, bucket{idx: b, first: p.T, lo: lo, hi: hi})
		}
		c := &out[len(out)-1]
		c.lo = math.Min(c.lo, lo)
		c.hi = math.Max(c.hi, hi)
		c.sum += mean
		c.n++
		c.last = p.T
		c.lastV = p.V
	}
	for i := range out {
		out[i].mean = out[i].sum / float64(out[i].n)
	}
	return out
}

// medianGap is the median time between successive points (0 for fewer
// than two).
func medianGap(ps []sample.Point) int64 {
	if len(ps) < 2 {
		return 0
	}
	gaps := make([]int64, 0, min(len(ps)-1, 4096))
	stride := max(1, (len(ps)-1)/4096)
	for i := 1; i < len(ps); i += stride {
		gaps = append(gaps, ps[i].T-ps[i-1].T)
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return gaps[len(gaps)/2]
}

// chartView is a chart ready for the template.
type chartView struct {
	ID, Title string
	// Anchor is the chart's id in the page; Ref marks a reference to a
	// chart drawn earlier.
	Anchor    string
	Ref       bool
	W, H      int
	Plot      rect
	Stacked   bool
	Areas     []shape
	Paths     []shape
	YTicks    []tick
	RTicks    []tick
	XTicks    []tick
	Legend    []legendItem
	Caption   string
	Unit      string
	RightUnit string
	From, To  int64
	Buckets   int
}

type rect struct{ X, Y, W, H, X2, Y2 int }

// shape is one drawn series (a path for a line, a polygon for a layer).
type shape struct {
	D      string
	Class  string
	Expr   string
	Label  string
	Axis   string
	Points int
	Min    string
	Max    string
	First  int64
	Last   int64
	Dashed bool
}

type tick struct {
	Pos   float64
	Label string
}

type legendItem struct {
	Class  string
	Expr   string
	Label  string
	Value  string
	Dashed bool
	Right  bool
	Empty  bool
}

// axisScale maps values to y.
type axisScale struct {
	lo, hi float64
	top    float64
	bottom float64
}

func (s axisScale) y(v float64) float64 {
	if s.hi == s.lo {
		return s.bottom
	}
	return s.bottom - (v-s.lo)/(s.hi-s.lo)*(s.bottom-s.top)
}

// niceRange extends [lo, hi] to round tick values and returns them.
func niceRange(lo, hi float64, n int) (float64, float64, []float64) {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		lo, hi = 0, 1
	}
	if lo > 0 {
		lo = 0
	}
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	var step float64
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		step = m * mag
		if step >= raw {
			break
		}
	}
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step) * step
	var ticks []float64
	for v := lo; v <= hi+step/2; v += step {
		ticks = append(ticks, v)
	}
	return lo, hi, ticks
}

// short renders a value in a unit, short.
func short(v float64, unit string) string {
	switch unit {
	case UnitBytes:
		return format.Bytes(int64(v))
	case UnitRatio:
		return strconv.FormatFloat(v*100, 'g', 3, 64) + "%"
	case UnitPerSecond:
		return si(v) + "/s"
	}
	return si(v)
}

func si(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// coord renders a coordinate with one decimal.
func coord(b *strings.Builder, x, y float64) {
	b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
	b.WriteByte(',')
	b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
}

// timeTicks chooses round tick times within [from, to] (ms, UTC).
func timeTicks(from, to int64, x func(int64) float64) []tick {
	span := time.Duration(to-from) * time.Millisecond
	steps := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour,
		6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 6 {
			step = s
			break
		}
	}
	layout := "15:04"
	if step >= 24*time.Hour {
		layout = "Jan 2"
	}
	var out []tick
	t := time.UnixMilli(from).UTC().Truncate(step)
	if t.UnixMilli() < from {
		t = t.Add(step)
	}
	for ; t.UnixMilli() <= to; t = t.Add(step) {
		label := t.Format(layout)
		if step < 24*time.Hour && t.Hour() == 0 && t.Minute() == 0 {
			label = t.Format("Jan 2")
		}
		out = append(out, tick{Pos: x(t.UnixMilli()), Label: label})
	}
	return out
}

// drawChart lays a chart out over [from, to] (ms).
func drawChart(c Chart, from, to int64, caption string) chartView {
	right := c.RightUnit != ""
	pw := plotWidth(right)
	n := pw / pxPerBucket
	v := chartView{ID: c.ID, Title: c.Title, W: svgW, H: svgH, Stacked: c.Stacked, Unit: c.Unit, RightUnit: c.RightUnit,
		From: from, To: to, Buckets: n, Caption: caption}
	v.Plot = rect{X: padL, Y: padT, W: pw, H: svgH - padT - padB, X2: padL + pw, Y2: svgH - padB}
	bw := float64(pw) / float64(n)
	xOf := func(idx int) float64 { return float64(padL) + (float64(idx)+0.5)*bw }
	xT := func(t int64) float64 {
		if to == from {
			return float64(padL)
		}
		return float64(padL) + float64(t-from)/float64(to-from)*float64(pw)
	}

	type prepared struct {
		line Line
		bs   []bucket
		gap  int64
		cls  string // colour class
	}
	var left, rightL, stack []prepared
	loL, hiL := math.Inf(1), math.Inf(-1)
	loR, hiR := math.Inf(1), math.Inf(-1)
	for i, l := range c.Lines {
		p := prepared{line: l, bs: bucketize(&c.Lines[i], from, to, n), gap: medianGap(l.Points), cls: fmt.Sprintf("c%d", i%10)}
		if l.Class != "" {
			p.cls = l.Class
		}
		switch {
		case l.Right:
			rightL = append(rightL, p)
			for _, b := range p.bs {
				loR, hiR = math.Min(loR, b.lo), math.Max(hiR, b.hi)
			}
		case c.Stacked && !l.Dashed:
			stack = append(stack, p)
		default:
			left = append(left, p)
			for _, b := range p.bs {
				loL, hiL = math.Min(loL, b.lo), math.Max(hiL, b.hi)
			}
		}
	}
	// Stacked layers: the cumulative means per bucket.
	cum := make([]float64, n)
	has := make([]bool, n)
	type layer struct {
		p        prepared
		bottom   []float64
		top      []float64
		idx      []int
		min, max float64
	}
	var layers []layer
	for _, p := range stack {
		ly := layer{p: p, min: math.Inf(1), max: math.Inf(-1)}
		byIdx := map[int]float64{}
		for _, b := range p.bs {
			byIdx[b.idx] = b.mean
			ly.min, ly.max = math.Min(ly.min, b.mean), math.Max(ly.max, b.mean)
			has[b.idx] = true
		}
		for i := 0; i < n; i++ {
			if !has[i] {
				continue
			}
			ly.idx = append(ly.idx, i)
			ly.bottom = append(ly.bottom, cum[i])
			cum[i] += byIdx[i]
			ly.top = append(ly.top, cum[i])
		}
		layers = append(layers, ly)
	}
	for i := 0; i < n; i++ {
		if has[i] {
			loL, hiL = math.Min(loL, 0), math.Max(hiL, cum[i])
		}
	}
	lo, hi, ticks := niceRange(loL, hiL, 5)
	ls := axisScale{lo: lo, hi: hi, top: float64(v.Plot.Y), bottom: float64(v.Plot.Y2)}
	for _, t := range ticks {
		v.YTicks = append(v.YTicks, tick{Pos: ls.y(t), Label: short(t, c.Unit)})
	}
	rs := ls
	if right {
		lo, hi, ticks := niceRange(loR, hiR, 5)
		rs = axisScale{lo: lo, hi: hi, top: float64(v.Plot.Y), bottom: float64(v.Plot.Y2)}
		for _, t := range ticks {
			v.RTicks = append(v.RTicks, tick{Pos: rs.y(t), Label: short(t, c.RightUnit)})
		}
	}
	v.XTicks = timeTicks(from, to, xT)

	legend := func(p prepared, cls string) {
		item := legendItem{Class: cls, Expr: p.line.Expr, Label: p.line.Label, Dashed: p.line.Dashed, Right: p.line.Right && c.RightUnit != "", Empty: len(p.bs) == 0}
		unit := c.Unit
		if p.line.Right {
			unit = c.RightUnit
		}
		if len(p.bs) > 0 {
			item.Value = short(p.bs[len(p.bs)-1].lastV, unit)
		}
		v.Legend = append(v.Legend, item)
	}
	for _, ly := range layers {
		if len(ly.idx) == 0 {
			legend(ly.p, ly.p.cls)
			continue
		}
		var b strings.Builder
		for j, i := range ly.idx {
			if j == 0 {
				b.WriteByte('M')
			} else {
				b.WriteByte('L')
			}
			coord(&b, xOf(i), ls.y(ly.top[j]))
		}
		for j := len(ly.idx) - 1; j >= 0; j-- {
			b.WriteByte('L')
			coord(&b, xOf(ly.idx[j]), ls.y(ly.bottom[j]))
		}
		b.WriteByte('Z')
		cls := ly.p.cls
		v.Areas = append(v.Areas, shape{D: b.String(), Class: cls, Expr: ly.p.line.Expr, Label: ly.p.line.Label, Axis: "left",
			Points: len(ly.p.bs), Min: num(ly.min), Max: num(ly.max), First: ly.p.bs[0].first, Last: ly.p.bs[len(ly.p.bs)-1].last})
		legend(ly.p, cls)
	}
	draw := func(p prepared, sc axisScale, axis string) {
		cls := p.cls
		if len(p.bs) == 0 {
			legend(p, cls)
			return
		}
		var b strings.Builder
		mn, mx := math.Inf(1), math.Inf(-1)
		maxGap := max(3*p.gap, int64(2*float64(to-from)/float64(n)))
		starts := func(j int) bool { return j == 0 || p.bs[j].first-p.bs[j-1].last > maxGap }
		for j, bk := range p.bs {
			if starts(j) {
				b.WriteByte('M')
			} else {
				b.WriteByte('L')
			}
			coord(&b, xOf(bk.idx), sc.y(bk.lo))
			switch {
			case bk.hi != bk.lo:
				b.WriteByte('L')
				coord(&b, xOf(bk.idx), sc.y(bk.hi))
			case starts(j) && (j == len(p.bs)-1 || starts(j+1)):
				// A point alone (a series seen in one sample, or
				// between two gaps) is a path of no length, which
				// nothing draws: a short tick shows it.
				b.WriteByte('L')
				coord(&b, xOf(bk.idx)+1, sc.y(bk.lo))
			}
			mn, mx = math.Min(mn, bk.lo), math.Max(mx, bk.hi)
		}
		v.Paths = append(v.Paths, shape{D: b.String(), Class: cls, Expr: p.line.Expr, Label: p.line.Label, Axis: axis,
			Points: len(p.bs), Min: num(mn), Max: num(mx), First: p.bs[0].first, Last: p.bs[len(p.bs)-1].last, Dashed: p.line.Dashed})
		legend(p, cls)
	}
	for _, p := range left {
		draw(p, ls, "left")
	}
	for _, p := range rightL {
		draw(p, rs, "right")
	}
	return v
}
