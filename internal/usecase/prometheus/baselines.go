package prometheus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/alerts"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/outfile"
	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
)

// AlertRules is the Prometheus rule file for match, with the hosts'
// baselines as recording rules when given.
func AlertRules(match string, baselines []alerts.Baseline) string {
	return alerts.YAML(alerts.Options{Match: match, Baselines: baselines})
}

// WriteAlertRules writes the rule file y to path through the checked writer
// (a block device, a socket or a link out of the directory named is
// refused, a terminal or FIFO written through, a file replaced whole).
func WriteAlertRules(path, y string) error { return outfile.WriteBytes(path, 0o644, []byte(y)) }

// ErrNoBaseline says no host has enough days of memory data.
var ErrNoBaseline = fmt.Errorf("no host has %d days of memory data for a baseline", diagnose.Thresholds.BaselineDays)

// baselineOf is the median of the daily peaks before the last day, when
// there are enough (diagnose's own computation of daily peaks and their
// median: the alert and the rule agree).
func baselineOf(inst string, peaks []float64) (alerts.Baseline, bool) {
	med, days := model.BaselineOf(peaks)
	if days == 0 || days < diagnose.Thresholds.BaselineDays/2 {
		return alerts.Baseline{}, false
	}
	return alerts.Baseline{Instance: inst, Bytes: med, Days: days}, true
}

// PromBaselines computes each host's baseline from the daily minima of
// available memory Prometheus has over the window.
func PromBaselines(ctx context.Context, c *prom.Client, match string, win history.Window) ([]alerts.Baseline, error) {
	r := win.Range()
	mins, err := fleet.Daily(ctx, c, func(window string) string { return diagnose.DailyMinAvailable(match, window) }, win.To, r)
	if err != nil {
		return nil, err
	}
	totals, err := c.Query(ctx, "max by (instance) (last_over_time("+promql.Selector("node_memory_MemTotal_bytes", match)+"["+fmt.Sprintf("%ds", int64(r/time.Second))+"]))", win.To)
	if err != nil {
		return nil, err
	}
	var out []alerts.Baseline
	for _, t := range totals {
		inst := t.Labels["instance"]
		var peaks []float64
		for _, a := range mins[inst] {
			peaks = append(peaks, t.Value-a)
		}
		if b, ok := baselineOf(inst, peaks); ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// FileBaselines computes each host's baseline from history (a recording
// or any source diagnose reads), with model.DailyPeaks.
func FileBaselines(path string, bars history.Bars) ([]alerts.Baseline, error) {
	update, done := bars("reading " + path)
	s, err := history.OpenAll(path, false, update)
	done()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	insts, err := s.Store.Instances()
	if err != nil {
		return nil, err
	}
	var out []alerts.Baseline
	for _, inst := range insts {
		ss, err := s.Store.Select(store.Query{Instance: inst, Names: []string{"node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes"}})
		if err != nil {
			return nil, err
		}
		w := &sample.Window{Instance: inst}
		for _, x := range ss {
			w.Add(x)
		}
		av, tot := w.Get("node_memory_MemAvailable_bytes"), w.Get("node_memory_MemTotal_bytes")
		if av == nil || tot == nil || len(tot.Points) == 0 {
			continue
		}
		total := tot.Points[len(tot.Points)-1].V
		used := make([]float64, len(av.Points))
		for i, p := range av.Points {
			used[i] = total - p.V
		}
		_, peaks := model.DailyPeaks(av.Points, used)
		if b, ok := baselineOf(inst, peaks); ok {
			out = append(out, b)
		}
	}
	if len(insts) == 0 {
		return nil, errors.New("no samples")
	}
	return out, nil
}

// Baseline is one host's baseline of memory use.
type Baseline = alerts.Baseline
