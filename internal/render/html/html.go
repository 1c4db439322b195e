// Package html renders a diagnosis as one self-contained HTML file:
// findings first, by severity, each with the charts that prove it (inline
// SVG drawn here, no script, nothing fetched), its remedies and the notes
// on the data. The same page serves a recording live.
package html

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Page is what a report shows.
type Page struct {
	// Source names where the data came from.
	Source    string
	Generated time.Time
	// Refresh > 0 makes the page reload itself every Refresh (the live
	// page of a recording).
	Refresh time.Duration
	// Summary lines head the page (a fleet's: how many instances were
	// scanned, which label the affected ones share).
	Summary   []string
	Instances []Instance
	// Fleet, when set, heads the page with a fleet scan's index (fleet.go).
	Fleet *Fleet
}

// Instance is one instance's diagnosis and the data its charts draw.
type Instance struct {
	Name     string
	From, To time.Time
	// Step is the resolution the rules read (0: raw samples).
	Step   time.Duration
	Series int
	Report *model.Report
	// Window holds the charted series at display resolution (the
	// findings' numbers never come from it).
	Window *sample.Window
}

//go:embed report.html.tmpl style.css
var files embed.FS

// tmpl is the page's template, parsed on first use: parsing it at init
// cost every command, check and record included, 2,764 allocations and
// 0.8 ms before main.
var tmpl = sync.OnceValue(func() *template.Template {
	style := mustRead("style.css")
	return template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
		"fmtTime": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"fmtMs": func(ms int64) string {
			return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04 UTC")
		},
		"span":  format.Span,
		"plus":  func(a, b int) int { return b + a },
		"minus": func(a, b int) int { return b - a },
		"css":   func() template.CSS { return template.CSS(style) },
	}).ParseFS(files, "report.html.tmpl"))
})

func mustRead(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type pageView struct {
	Source      string
	Generated   time.Time
	RefreshSecs int
	Summary     []string
	Counts      []sevCount
	Findings    []findingView
	Instances   []instanceView
	Notes       []noteView
	Rules       int
	// Evaluated is how many rules judged the data (every instance's,
	// for a fleet: a rule skipped on any instance is not counted).
	Evaluated    int
	NotEvaluated []string
	Unread       []string
	MultiInst    bool
	ShowInstance bool
	Fleet        *fleetView
	ScriptHash   string
}

type sevCount struct {
	Severity string
	N        int
}

type findingView struct {
	Anchor   string
	Instance string
	Severity string
	ID       string
	Title    string
	Subject  string
	Summary  string
	Evidence []evidenceView
	Remedies []model.Remedy
	Charts   []chartView
	NoCharts string
}

type evidenceView struct{ Name, Value string }

type instanceView struct {
	Name      string
	From, To  time.Time
	Span      string
	Step      string
	Series    int
	Findings  int
	Overview  []chartView
	AtTheEnd  string
	NoCharted bool
}

type noteView struct {
	Source, Message, Hides, Fix string
}

// Render writes the page.
func Render(w io.Writer, p *Page) error {
	v := pageView{Source: p.Source, Generated: p.Generated, RefreshSecs: int(p.Refresh.Seconds()), Summary: p.Summary,
		Rules: len(diagnose.Rules()), MultiInst: len(p.Instances) > 1}
	titles := map[string]string{}
	for _, r := range diagnose.Rules() {
		m := r.Meta()
		titles[m.ID] = m.Title
	}
	type found struct {
		inst *Instance
		f    model.Finding
	}
	var all []found
	skipped := map[string]bool{}
	for i := range p.Instances {
		in := &p.Instances[i]
		ref := model.InstanceRef(in.Name) // the name in its notes' prefixes
		iv := instanceView{Name: in.Name, From: in.From, To: in.To, Span: format.Span(in.To.Sub(in.From)), Series: in.Series,
			Step: "raw samples"}
		if in.Step > 0 {
			iv.Step = "steps of " + in.Step.String()
		}
		if in.Report != nil {
			iv.Findings = len(in.Report.Findings)
			for _, sk := range in.Report.Coverage.NotEvaluated {
				if !skipped[sk.ID] {
					skipped[sk.ID] = true
					v.NotEvaluated = append(v.NotEvaluated, sk.ID+" ("+sk.Reason+")")
				}
			}
			for _, u := range in.Report.Coverage.Unread {
				if v.MultiInst {
					u = ref + ": " + u
				}
				v.Unread = append(v.Unread, u)
			}
			for _, f := range in.Report.Findings {
				all = append(all, found{in, f})
			}
			for _, n := range in.Report.Notes {
				src := n.Source
				if v.MultiInst {
					src = ref + ": " + src
				}
				v.Notes = append(v.Notes, noteView{Source: src, Message: n.Message, Hides: n.Hides, Fix: n.Fix})
			}
			if h := in.Report.Host; h != nil && h.Accounting.TotalBytes > 0 && h.Accounting.UsedMissing == "" {
				a := h.Accounting
				iv.AtTheEnd = fmt.Sprintf("total %s, available %s, used %.1f%%, unreclaimable slab %s",
					format.Bytes(a.TotalBytes), format.Bytes(a.AvailableBytes), a.UsedPercent,
					format.Bytes(h.Slab.UnreclaimableBytes))
				if d := h.Cgroups.MemoryDying; d != nil {
					iv.AtTheEnd += fmt.Sprintf(", dying memory cgroups %d", *d)
				}
			}
		}
		v.Instances = append(v.Instances, iv)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if a, b := all[i].f.Severity.Rank(), all[j].f.Severity.Rank(); a != b {
			return a > b
		}
		return all[i].f.ID < all[j].f.ID
	})
	v.Evaluated = v.Rules - len(skipped)
	detailed := map[[2]string]string{}
	counts := map[model.Severity]int{}
	charts := chartSet{seen: map[string]string{}}
	for k, fd := range all {
		f := fd.f
		counts[f.Severity]++
		fv := findingView{Anchor: "finding-" + strconv.Itoa(k+1), Severity: string(f.Severity), ID: f.ID,
			Title: titles[f.ID], Subject: f.Subject, Summary: f.Summary, Remedies: f.Remedies}
		if v.MultiInst && !strings.HasPrefix(f.Subject, fd.inst.Name+" ") {
			fv.Instance = fd.inst.Name
		}
		for _, e := range f.Evidence {
			fv.Evidence = append(fv.Evidence, evidenceView{e.Name, evidenceValue(e)})
		}
		if !snapshot(fd.inst) {
			for _, c := range ChartsFor(fd.inst.Window, &f) {
				fv.Charts = append(fv.Charts, charts.get(fd.inst, c))
			}
		}
		if len(fv.Charts) == 0 {
			switch {
			case snapshot(fd.inst) && len(ChartIDs(f.ID)) > 0:
				fv.NoCharts = "The data is a single snapshot: there is no history to chart; the numbers are above."
			case len(ChartIDs(f.ID)) == 0:
				fv.NoCharts = "This finding is about a single state; its numbers are above."
			default:
				fv.NoCharts = "No chart: the data holds none of the series that would show this over time (" +
					strings.Join(ChartIDs(f.ID), ", ") + ")."
			}
		}
		v.Findings = append(v.Findings, fv)
		if k := [2]string{fd.inst.Name, f.ID}; detailed[k] == "" {
			detailed[k] = fv.Anchor
		}
	}
	if p.Fleet != nil {
		v.Fleet = fleetIndex(p.Fleet, detailed)
		v.ScriptHash = fleetScriptHash()
	}
	for i := range p.Instances {
		in := &p.Instances[i]
		if snapshot(in) {
			v.Instances[i].NoCharted = true
			continue
		}
		for _, c := range Overview(in.Window) {
			v.Instances[i].Overview = append(v.Instances[i].Overview, charts.get(in, c))
		}
		v.Instances[i].NoCharted = len(v.Instances[i].Overview) == 0
	}
	for _, s := range []model.Severity{model.Critical, model.Warning, model.Info} {
		if counts[s] > 0 {
			v.Counts = append(v.Counts, sevCount{string(s), counts[s]})
		}
	}
	return tmpl().Execute(w, v)
}

// snapshot reports whether an instance's data is one instant (a capture):
// nothing to draw over time.
func snapshot(in *Instance) bool {
	return in.Window == nil || !in.To.After(in.From)
}

// chartSet draws each distinct chart once: a chart that several findings
// (or the overview) share is drawn where it first appears and referred to
// afterwards.
type chartSet struct {
	seen map[string]string
	n    int
}

func (cs *chartSet) get(in *Instance, c Chart) chartView {
	key := in.Name + "\x00" + c.ID + "\x00" + c.Title
	for _, l := range c.Lines {
		key += "\x00" + l.Expr
	}
	if anchor, ok := cs.seen[key]; ok {
		return chartView{ID: c.ID, Title: c.Title, Anchor: anchor, Ref: true}
	}
	cs.n++
	anchor := "chart-" + strconv.Itoa(cs.n)
	cs.seen[key] = anchor
	v := drawChart(c, in.From.UnixMilli(), in.To.UnixMilli(), caption(in))
	v.Anchor = anchor
	return v
}

func caption(in *Instance) string {
	c := in.Name + ", " + in.From.UTC().Format("2006-01-02 15:04") + " … " + in.To.UTC().Format("2006-01-02 15:04") + " UTC"
	if in.Window != nil && in.Window.Step > 0 {
		c += "; drawn from steps of " + in.Window.Step.String() + " (min and max of each kept)"
	}
	return c
}

func evidenceValue(e model.Evidence) string { return e.Human() }
