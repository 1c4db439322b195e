package diagnose

// memory_baseline_exceeded: today's peak is above the usual peaks.
//
// Mechanism: a leak, a traffic change or a new release raises the daily
// peak of used memory long before anything runs out. Incident 4's team
// alerted when a process' private bytes exceeded the median of two weeks of
// daily maxima; this rule does the same for the host (MemTotal −
// MemAvailable) and for each recorded process (RSS, by name).
//
// Fires: the latest day's peak exceeds the median of the previous daily
// peaks (up to 14) by more than 10 % (and by 1 % of MemTotal for the host,
// 64 MiB for a process). Needs a week of days before the day judged (8
// days with data); less gives a note. Two weeks read from Prometheus up
// to a midnight (`--range 14d`) are 14 days: 13 before the day judged.
//
// Known false positives: planned growth (more tenants, a bigger cache
// setting); a step that stays is the new baseline after two weeks.

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

type memoryBaselineExceeded struct{}

func init() { register(memoryBaselineExceeded{}) }

func (memoryBaselineExceeded) Meta() Meta {
	return Meta{ID: "memory_baseline_exceeded", Trend: true, Title: "daily memory peak above the two-week baseline",
		Needs:     []Need{{"node_memory_MemAvailable_bytes", "record /proc/meminfo over time"}, {"node_memory_MemTotal_bytes", "record /proc/meminfo over time"}},
		Reads:     []string{"node_memory_MemTotal_bytes", "memdoctor_process_rss_bytes"},
		StepMin:   []string{"node_memory_MemAvailable_bytes"},
		StepMax:   []string{"memdoctor_process_rss_bytes"},
		Charts:    []string{ChartMemoryCategories},
		Prefilter: &Prefilter{About: "the lowest MemAvailable of each day (the day's peak of use)", Daily: DailyMinAvailable, Score: baselineScore},
		Alerts:    baselineAlerts,
		Doc:       "today's peak above the median of the previous 14 daily peaks (host and processes)"}
}

// baselineScore compares the last daily peak of use with the usual one,
// scaled so that 1 is the rule's margin.
func baselineScore(v PrefilterValues) float64 {
	if len(v.Daily) < 3 {
		return 0
	}
	used := make([]float64, len(v.Daily))
	for i, a := range v.Daily {
		used[i] = v.Total - a
	}
	med, _ := model.BaselineOf(used)
	if med <= 0 {
		return 0
	}
	margin := float64(baselineMargin) // 1.1 as a float64: its excess is not exactly 0.1
	return (used[len(used)-1]/med - 1) / (margin - 1)
}

func baselineAlerts(o AlertOptions) []Alert {
	total, avail := sel("node_memory_MemTotal_bytes", o.Match), sel("node_memory_MemAvailable_bytes", o.Match)
	used := fmt.Sprintf("(%s - %s)", total, avail)
	margin := float64(baselineMargin)
	a := Alert{Name: "MemdoctorMemoryAboveBaseline", For: "15m", Severity: "warning"}
	if o.StaticBaselines {
		a.Expr = fmt.Sprintf("%s\n  > on (instance) group_left %s * %s", used, promNum(margin), BaselineRecord)
		a.Summary = fmt.Sprintf("memory use on {{ $labels.instance }} is more than %.0f%% above its usual daily peak", 100*(margin-1))
	} else {
		a.Expr = fmt.Sprintf("%s\n  > %s * quantile_over_time(0.5, max_over_time(%s[1d:5m])[%dd:1d] offset 1d)", used, promNum(margin), used, model.BaselineDays)
		a.Summary = fmt.Sprintf("memory use on {{ $labels.instance }} is more than %.0f%% above the median of its last %d daily peaks", 100*(margin-1), model.BaselineDays)
	}
	return []Alert{a}
}

const (
	baselineMin    = 7 // daily peaks the baseline takes at least: a week before the day judged
	baselineMargin = 1.10
)

func (memoryBaselineExceeded) Eval(in *Input) []model.Finding {
	w := in.Window
	if w == nil {
		return nil
	}
	if !windowUsable(in, "memory_baseline_exceeded", "node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes") {
		return nil
	}
	avail := w.Get("node_memory_MemAvailable_bytes")
	total := lastValue(w.Get("node_memory_MemTotal_bytes"))
	if avail == nil || total <= 0 {
		return nil
	}
	used := make([]float64, len(avail.Points))
	for i, p := range avail.Points {
		v := p.V
		if avail.Min != nil {
			v = avail.Min[i] // the step's lowest available is its highest use
		}
		used[i] = total - v
	}
	days, peaks := model.DailyPeaks(avail.Points, used)
	if len(days) < baselineMin+1 {
		in.Note("memory_baseline_exceeded", fmt.Sprintf("%s with data: the baseline needs %d (a week before the day judged)", format.Count(float64(len(days)), "day", "days"), baselineMin+1), "record longer, or read a longer range")
		return nil
	}
	var out []model.Finding
	if f := baselineFinding(w, "host", "used", peaks, total/100); f != nil {
		out = append(out, *f)
	}
	// Per process: daily RSS peaks by name, all PIDs of the name together.
	byComm := map[string][]*sample.Series{}
	for _, s := range w.Select("memdoctor_process_rss_bytes") {
		byComm[s.Labels.Get("comm")] = append(byComm[s.Labels.Get("comm")], s)
	}
	for comm, ss := range byComm {
		var ps []sample.Point
		var vals []float64
		for _, s := range ss {
			for i, p := range s.Points {
				ps = append(ps, p)
				if s.Max != nil {
					vals = append(vals, s.Max[i])
				} else {
					vals = append(vals, p.V)
				}
			}
		}
		d, pk := model.DailyPeaks(ps, vals)
		if len(d) < baselineMin+1 {
			continue
		}
		if f := baselineFinding(w, "process "+comm, comm+" RSS", pk, 64<<20); f != nil {
			out = append(out, *f)
		}
	}
	return out
}

func baselineFinding(w *sample.Window, subj, what string, peaks []float64, minExcess float64) *model.Finding {
	latest := peaks[len(peaks)-1]
	base, n := model.BaselineOf(peaks)
	if latest <= base*baselineMargin || latest-base < minExcess {
		return nil
	}
	return &model.Finding{ID: "memory_baseline_exceeded", Severity: model.Warning, Subject: subject(w, subj),
		Summary: fmt.Sprintf("%s peaked at %s today, %.0f%% above the median of the previous %d daily peaks (%s)",
			what, format.Bytes(int64(latest)), 100*(latest/base-1), n, format.Bytes(int64(base))),
		Evidence: []model.Evidence{
			ev("latest_daily_peak_bytes", latest, "bytes"),
			ev("baseline_median_bytes", base, "bytes"),
			ev("baseline_days", float64(n), "count"),
			ev("excess_percent", 100*(latest/base-1), "percent"),
		},
		Remedies: []model.Remedy{
			{Title: "find what grew today: diagnose the last day against the two weeks before",
				Commands: []string{"memdoctor diagnose --from SRC --since -1d"}, Risk: "none (read-only)"},
		},
	}
}
