package history

import (
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/compare"
	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
)

// CompareSources compares two sources, or two windows (FROM/TO) of them
// (wa and wb empty: all their data). The values are hosts, or days when
// a group is a single host.
func CompareSources(pa, wa, pb, wb string, bars Bars) (*compare.Result, error) {
	a, notesA, err := loadWindows(pa, wa, bars)
	if err != nil {
		return nil, fmt.Errorf("group A: %w", err)
	}
	var b []*sample.Window
	var notesB []string
	if pb == pa {
		b, _, err = loadWindows(pb, wb, bars) // one source, two windows: its notes once
	} else {
		b, notesB, err = loadWindows(pb, wb, bars)
	}
	if err != nil {
		return nil, fmt.Errorf("group B: %w", err)
	}
	perDay := len(a) < 2 || len(b) < 2
	unit := "host"
	if perDay {
		unit = "day"
	}
	name := func(p, w string) string {
		if w != "" {
			return p + " " + w
		}
		return p
	}
	va, vb := compare.FromWindows(a, perDay), compare.FromWindows(b, perDay)
	reclaimNotes := append(reclaimValues("A", a, perDay, va), reclaimValues("B", b, perDay, vb)...)
	res := compare.Compare(name(pa, wa), name(pb, wb), unit, va, vb)
	res.Notes = append(res.Notes, reclaimNotes...)
	res.Notes = append(res.Notes, compare.NonFinite("A", a)...)
	res.Notes = append(res.Notes, compare.NonFinite("B", b)...)
	for _, n := range notesA {
		res.Notes = append(res.Notes, "group A: "+n)
	}
	for _, n := range notesB {
		res.Notes = append(res.Notes, "group B: "+n)
	}
	return res, nil
}

// loadWindows reads every instance of a source (within win, when given),
// with what reading it left out, one line each.
func loadWindows(path, win string, bars Bars) ([]*sample.Window, []string, error) {
	update, done := bars("reading " + path)
	s, err := OpenAll(path, false, update)
	done()
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	var notes []string
	for _, n := range s.Notes {
		notes = append(notes, n.Source+": "+n.Message)
	}
	insts, err := s.Store.Instances()
	if err != nil {
		return nil, nil, err
	}
	var out []*sample.Window
	for _, inst := range insts {
		first, last, err := s.Store.TimeRange(inst)
		if err != nil {
			return nil, nil, err
		}
		from, to := first, last
		if win != "" {
			if from, to, err = ParseWindow(win, last); err != nil {
				return nil, nil, err
			}
		}
		ss, err := s.Store.Select(store.Query{Instance: inst, Names: append(model.ReclaimSeries(), compare.WindowNames...), From: from, To: to})
		if err != nil {
			return nil, nil, err
		}
		w := &sample.Window{Instance: inst, From: from, To: to}
		for _, x := range ss {
			w.Add(x)
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s holds no samples", path)
	}
	return out, notes, nil
}

// reclaimValues adds the reclaim counters' per-day rates of each window to
// v, from diagnose's Reclaim model (the span watermark_thrash judges): per
// host, or, for a group of one host, per equal part of its span. The notes
// say each window's counts and span, and when the span is too short for
// daily rates to mean more than the counts.
func reclaimValues(group string, ws []*sample.Window, parts bool, v compare.Values) []string {
	var notes []string
	keys := []string{"kswapd_low_wmark_hit_quickly", "allocstall", "pgscan_direct"}
	for _, w := range ws {
		n := 0
		if parts {
			n = compare.RecordingParts
		}
		whole, each, ok := model.WindowReclaim(w, n)
		if !ok {
			continue
		}
		put := func(k, unit string, x float64) {
			if v[k] == nil {
				v[k] = map[string]float64{}
			}
			v[k][unit] = x
		}
		for _, k := range keys {
			if !parts {
				put(k, w.Instance, whole.PerDay[k])
				continue
			}
			for i, r := range each {
				u := fmt.Sprintf("part %d/%d", i+1, len(each))
				if len(ws) > 1 {
					u = w.Instance + " " + u
				}
				put(k, u, r.PerDay[k])
			}
		}
		short := ""
		if whole.Short() {
			short = ": too short a span for daily rates, the per-day figures extrapolate these counts"
		}
		notes = append(notes, fmt.Sprintf("group %s, %s: %s, %s, %s directly in %s%s",
			group, w.Instance, format.Count(whole.Counts["kswapd_low_wmark_hit_quickly"], "quick kswapd wake-up", "quick kswapd wake-ups"),
			format.Count(whole.Counts["allocstall"], "direct-reclaim stall", "direct-reclaim stalls"),
			format.Count(whole.Counts["pgscan_direct"], "page scanned", "pages scanned"),
			format.Duration(time.Duration(whole.Seconds*float64(time.Second))), short))
	}
	return notes
}
