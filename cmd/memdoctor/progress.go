package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/spf13/cobra"
)

// progressBar draws "label  42% [=====     ]" on a terminal, redrawn in
// place; on anything else it draws nothing.
type progressBar struct {
	w     io.Writer
	label string
	on    bool
	mu    sync.Mutex
	start time.Time
	drawn bool
}

func newProgress(w io.Writer, label string) *progressBar {
	return &progressBar{w: w, label: label, on: colorOK(w), start: time.Now()}
}

// update is a source.IngestOptions.Progress callback.
func (p *progressBar) update(done, total int64) {
	if !p.on || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	frac := float64(done) / float64(total)
	frac = min(max(frac, 0), 1)
	const width = 30
	n := int(frac * width)
	eta := ""
	if el := time.Since(p.start); frac > 0.02 && frac < 1 {
		eta = fmt.Sprintf(" %s left", (time.Duration(float64(el)/frac) - el).Round(time.Second))
	}
	_, _ = fmt.Fprintf(p.w, "\r%s %3.0f%% [%s%s]%s   ", p.label, 100*frac, strings.Repeat("=", n), strings.Repeat(" ", width-n), eta)
	p.drawn = true
}

// line writes a line of its own, clearing the bar first (the next update
// draws it again). It writes on any writer, terminal or not.
func (p *progressBar) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		_, _ = fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", len(p.label)+50))
		p.drawn = false
	}
	_, _ = fmt.Fprintln(p.w, s)
}

// done clears the bar.
func (p *progressBar) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		_, _ = fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", len(p.label)+50))
	}
}

// progressBars starts a progress bar on cmd's stderr for each read.
func progressBars(cmd *cobra.Command) history.Bars {
	return func(label string) (history.Progress, func()) {
		bar := newProgress(cmd.ErrOrStderr(), label)
		return bar.update, bar.done
	}
}
