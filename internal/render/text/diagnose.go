package text

import (
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

// WindowSummary says what data one instance's diagnosis read.
type WindowSummary struct {
	Instance string
	From, To time.Time
	Step     time.Duration
	Series   int
	Findings int
}

// DiagnoseText writes the terminal report of a diagnosis over time:
// findings first, then what data each instance had, the state at the end
// (single instance) and the notes.
func DiagnoseText(w io.Writer, r *model.Report, ws []WindowSummary, opt Options) error {
	return DiagnoseTextEach(w, r, len(ws), func(fn func(WindowSummary) error) error {
		for _, s := range ws {
			if err := fn(s); err != nil {
				return err
			}
		}
		return nil
	}, opt)
}

// DiagnoseTextEach is DiagnoseText of the n summaries each gives its
// function in turn (read back from a file, say), each written as it comes.
func DiagnoseTextEach(w io.Writer, r *model.Report, n int, each func(func(WindowSummary) error) error, opt Options) error {
	if opt.Top <= 0 {
		opt.Top = 5
	}
	p := &printer{w: w, color: opt.Color}
	p.f("%s %d instance(s)\n", p.paint("1", "memdoctor diagnose:"), n)
	coverage(p, r)
	findings(p, r)
	p.heading("DATA")
	if err := each(func(s WindowSummary) error {
		res := "raw samples"
		if s.Step > 0 {
			res = "steps of " + s.Step.String()
		}
		p.f("  %s: %s … %s (%s), %d series read at %s, %d findings\n", s.Instance,
			s.From.UTC().Format("2006-01-02 15:04"), s.To.UTC().Format("2006-01-02 15:04"), format.Span(s.To.Sub(s.From)),
			s.Series, res, s.Findings)
		return p.err
	}); err != nil {
		return err
	}
	if n == 1 && r.Host != nil && r.Accounting.TotalBytes > 0 && r.Accounting.Invalid == "" && r.Accounting.AvailableMissing == "" && r.Accounting.UsedMissing == "" {
		p.heading("AT THE END")
		a := r.Accounting
		p.f("  total %s, available %s, used %.1f%%; unreclaimable slab %s", hb(a.TotalBytes), hb(a.AvailableBytes), a.UsedPercent, hb(r.Slab.UnreclaimableBytes))
		if d := r.Cgroups.MemoryDying; d != nil {
			p.f("; dying memory cgroups %d", *d)
		}
		p.f("\n")
	}
	if len(r.Notes) > 0 {
		p.heading("NOTES")
		for _, n := range r.Notes {
			line := "  - " + n.Source + ": " + n.Message
			if n.Fix != "" {
				line += "; fix: " + n.Fix
			}
			p.f("%s\n", line)
		}
	}
	return p.err
}
