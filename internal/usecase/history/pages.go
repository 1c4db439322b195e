package history

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/outfile"
	"github.com/memdoctor/memdoctor/internal/render/html"
	"github.com/memdoctor/memdoctor/internal/store"
)

// Page diagnoses each instance of s (as Diagnose does) and loads the
// charted series at display resolution.
func Page(s *Source, since, until string) (*PageReport, error) {
	page := &html.Page{Source: s.Path, Generated: time.Now()}
	var results []InstanceResult
	for _, inst := range s.Instances {
		r, err := s.DiagnoseInstance(inst, since, until)
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", inst, err)
		}
		results = append(results, r)
		win := Window{From: r.From, To: r.To, Step: ChartStep(r.To.Sub(r.From), html.Buckets(false))}
		w, _, err := s.window(store.Query{Instance: inst, Names: html.SeriesNames()}, win)
		if err != nil {
			return nil, fmt.Errorf("instance %s: reading the charted series: %w", inst, err)
		}
		page.Instances = append(page.Instances, html.Instance{Name: inst, From: r.From, To: r.To,
			Step: r.Step(), Series: r.Series, Report: r.Report, Window: w})
	}
	return &PageReport{Page: page, Instances: results}, nil
}

// PageReport is a report page and the diagnoses of the instances it
// shows.
type PageReport struct {
	Page      *html.Page
	Instances []InstanceResult
}

// Write renders the page, reloading itself every refresh (0: never), and
// writes it to w when out is "-", else to the file out: a new or regular
// file is replaced atomically, so a reader never sees half a report; a
// terminal, /dev/null or a FIFO is written through, never replaced. It
// returns the HTML.
func (r *PageReport) Write(out string, w io.Writer, refresh time.Duration) ([]byte, error) {
	r.Page.Refresh = refresh
	var buf bytes.Buffer
	if err := html.Render(&buf, r.Page); err != nil {
		return nil, fmt.Errorf("rendering the report: %w", err)
	}
	if out == "-" {
		_, err := w.Write(buf.Bytes())
		return buf.Bytes(), err
	}
	return buf.Bytes(), outfile.WriteBytes(out, 0o644, buf.Bytes())
}
