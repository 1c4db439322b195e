// Package fleet diagnoses many hosts through the Prometheus that already
// scrapes them. A scan asks Prometheus a handful of aggregated queries
// (deriv, increase, min_over_time over the range) that cover every
// instance at once, keeps as suspects the instances whose aggregates come
// anywhere near a rule's threshold, fetches the full range of only those,
// and runs memdoctor's rules on them exactly as on a recording: the
// aggregates only choose what to fetch, the rules decide. Findings are
// then correlated with labels (kernel release, rack, ...).
package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Options shape a scan.
type Options struct {
	// Match is a label selector every queried series must match, as
	// `{job="node",dc="ams"}` or `job="node"` (may be empty).
	Match string
	// End of the range (default now) and its length (default 14 days).
	End   time.Time
	Range time.Duration
	// Step is the resolution of suspects' full ranges (required: the
	// caller resolves it, internal/usecase/history.PromStep by default).
	Step time.Duration
	// By lists labels to correlate findings with, besides the kernel
	// release.
	By []string
	// All skips the pre-filter: every instance's full range is fetched and
	// diagnosed (slow; for checking the pre-filter).
	All bool
	// Workers fetch suspects in parallel (default 2).
	Workers int
	// Progress is told how many suspects of how many are done.
	Progress func(done, total int64)
	// Checkpoint, when set, keeps each judged instance as it is judged and
	// gives back those judged by an earlier run of the same scan
	// (checkpoint.go).
	Checkpoint *Checkpoint
}

// Instance is one scanned host.
type Instance struct {
	Instance string            `json:"instance"`
	Labels   map[string]string `json:"labels"`
	// Score is the pre-filter's: the largest ratio of an aggregate to its
	// rule's threshold (1 = at the threshold); Signals name them.
	Score   float64            `json:"score"`
	Signals map[string]float64 `json:"signals,omitempty"`
	Suspect bool               `json:"suspect"`
	// Findings are the rules' (suspects only).
	Findings []model.Finding `json:"findings"`
	Notes    []sample.Note   `json:"notes,omitempty"`
	// NotEvaluated are the rules that could not judge a host known from
	// its containers only (Result.Kubelet), with why.
	NotEvaluated []model.RuleSkip `json:"not_evaluated,omitempty"`
	Series       int              `json:"series_fetched,omitempty"`
	Severity     model.Severity   `json:"severity,omitempty"`
	Error        string           `json:"error,omitempty"`
}

// Result is a scan's outcome.
type Result struct {
	Source      string      `json:"source"`
	Match       string      `json:"match,omitempty"`
	From        time.Time   `json:"from"`
	To          time.Time   `json:"to"`
	StepSeconds float64     `json:"step_seconds"`
	Instances   []*Instance `json:"instances"`
	Suspects    int         `json:"suspects"`
	// Resumed is how many of the suspects were judged by an earlier run
	// of the same scan and taken from its checkpoint.
	Resumed     int           `json:"resumed,omitempty"`
	Correlation []Correlation `json:"correlations"`
	Warnings    []string      `json:"warnings,omitempty"`
	// Kubelet is set when no instance has node_exporter's series and the
	// hosts were inferred from their containers' (kubelet.go).
	Kubelet *Kubelet `json:"kubelet,omitempty"`
	Cost    Cost     `json:"cost"`
}

// Cost is what the scan took.
type Cost struct {
	prom.Stats
	ScanQueries int64 `json:"scan_queries"`
	// ScanSeconds is the aggregated scan's time, DurationSeconds all of
	// it (suspects fetched and judged included).
	ScanSeconds     float64 `json:"scan_seconds"`
	DurationSeconds float64 `json:"duration_seconds"`
}

func promDur(d time.Duration) string { return promql.Duration(d) }

// query is one aggregated scan query: a rule's (rule is its id) or the
// scan's own (rule "").
type query struct {
	rule, key, expr string
}

// scanQueries are the aggregates the pre-filter reads, per instance: every
// rule's, and MemTotal (which instances there are).
func scanQueries(match string, r, step time.Duration) []query {
	qs := []query{{"", "total", "max by (instance) (last_over_time(" + promql.Selector("node_memory_MemTotal_bytes", match) + "[" + promDur(r) + "]))"}}
	for _, rule := range diagnose.Rules() {
		m := rule.Meta()
		if m.Prefilter == nil || m.Prefilter.Queries == nil {
			continue
		}
		for _, q := range m.Prefilter.Queries(diagnose.PrefilterArgs{Match: match, Range: r, Step: step}) {
			qs = append(qs, query{m.ID, q.Key, q.Expr})
		}
	}
	return qs
}

// queryFor is the scan query q asked with another --match (a part of the
// fleet: sharder).
func queryFor(q query, match string, r, step time.Duration) string {
	for _, x := range scanQueries(match, r, step) {
		if x.rule == q.rule && x.key == q.key {
			return x.expr
		}
	}
	return q.expr // not reached: the same rules ask the same keys
}

// Scan diagnoses the fleet behind c.
func Scan(ctx context.Context, c *prom.Client, o Options) (*Result, error) {
	t0 := time.Now()
	if o.Range <= 0 {
		o.Range = 14 * 24 * time.Hour
	}
	if o.End.IsZero() {
		o.End = time.Now()
	}
	if o.Step <= 0 {
		return nil, errors.New("fleet scan: no step given")
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	from := o.End.Add(-o.Range)
	res := &Result{Source: c.URL(), Match: o.Match, From: from, To: o.End, StepSeconds: o.Step.Seconds()}
	// The aggregates are independent queries: o.Workers of them at a time
	// (Prometheus evaluates queries concurrently).
	// vals[rule][key][instance]
	vals := map[string]map[string]map[string]float64{}
	daily := map[string]map[string][]float64{}
	var mu sync.Mutex
	var tasks []func() error
	// Rules that ask the same aggregate (whether a series is there at all)
	// share one query.
	same := map[string][]query{}
	var qs []query
	for _, q := range scanQueries(o.Match, o.Range, o.Step) {
		if same[q.expr] == nil {
			qs = append(qs, q)
		}
		same[q.expr] = append(same[q.expr], q)
	}
	sh := &sharder{c: c, match: o.Match, from: from, to: o.End}
	for _, q := range qs {
		tasks = append(tasks, func() error {
			m := map[string]float64{}
			err := sh.each(ctx, func(ctx context.Context, match string) error {
				expr := q.expr
				if match != o.Match {
					expr = queryFor(q, match, o.Range, o.Step)
				}
				v, err := c.Query(ctx, expr, o.End)
				if err != nil {
					return err
				}
				for _, s := range v {
					if inst := s.Labels["instance"]; inst != "" {
						m[inst] = s.Value
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, q := range same[q.expr] {
				if vals[q.rule] == nil {
					vals[q.rule] = map[string]map[string]float64{}
				}
				vals[q.rule][q.key] = m // read only from here on
			}
			return nil
		})
	}
	for _, rule := range diagnose.Rules() {
		m := rule.Meta()
		if m.Prefilter == nil || m.Prefilter.Daily == nil {
			continue
		}
		expr := m.Prefilter.Daily
		tasks = append(tasks, func() error {
			all := map[string][]float64{}
			err := sh.each(ctx, func(ctx context.Context, match string) error {
				d, err := Daily(ctx, c, func(window string) string { return expr(match, window) }, o.End, o.Range)
				for inst, v := range d {
					all[inst] = v
				}
				return err
			})
			if err != nil {
				return err
			}
			mu.Lock()
			daily[m.ID] = all
			mu.Unlock()
			return nil
		})
	}
	if err := runAll(ctx, o.Workers, tasks); err != nil {
		return nil, err
	}
	labels, err := instanceLabels(ctx, c, sh, o.End, o.Range, o.By)
	if err != nil {
		return nil, err
	}
	res.Cost.ScanQueries = c.Stats().Queries
	res.Cost.ScanSeconds = time.Since(t0).Seconds()
	if len(vals[""]["total"]) == 0 {
		has, err := HasContainers(ctx, c, o.Match, from, o.End)
		if err != nil {
			return nil, err
		}
		none := fmt.Sprintf("no instance has node_memory_MemTotal_bytes%s between %s and %s", matchText(o.Match),
			from.UTC().Format(time.RFC3339), o.End.UTC().Format(time.RFC3339))
		if !has {
			return nil, fmt.Errorf("%s, nor any container cadvisor or kube-state-metrics series: check --match, --until and that node_exporter (or memdoctor record), or the kubelet's cadvisor, is scraped", none)
		}
		if namesExporters(o.Match) {
			// Matchers on job and instance name node exporters (they are
			// not applied to container series): a typo in them must not
			// turn into a scan of the whole cluster.
			return nil, fmt.Errorf("%s; the Prometheus has cadvisor or kube-state-metrics series, read as a cluster without node_exporter only when --match names no job or instance: give matchers on the containers' labels (namespace) or none", none)
		}
		return scanKubelet(ctx, c, o, res, t0)
	}
	days := o.Range.Hours() / 24
	for inst, total := range vals[""]["total"] {
		in := &Instance{Instance: inst, Labels: labels[inst], Signals: map[string]float64{}}
		if in.Labels == nil {
			in.Labels = map[string]string{}
		}
		sig := func(name string, ratio float64) {
			if ratio > 0 && !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
				in.Signals[name] = ratio
				in.Score = math.Max(in.Score, ratio)
			}
		}
		for _, rule := range diagnose.Rules() {
			m := rule.Meta()
			if m.Prefilter == nil {
				continue
			}
			pv := diagnose.PrefilterValues{Values: map[string]float64{}, Daily: daily[m.ID][inst], Total: total, Days: days}
			for k, byInst := range vals[m.ID] {
				if x, ok := byInst[inst]; ok {
					pv.Values[k] = x
				}
			}
			sig(m.ID, m.Prefilter.Score(pv))
		}
		in.Suspect = o.All || in.Score >= diagnose.PrefilterFactor
		res.Instances = append(res.Instances, in)
	}
	sort.Slice(res.Instances, func(i, j int) bool { return res.Instances[i].Instance < res.Instances[j].Instance })
	if err := diagnoseSuspects(ctx, c, o, res, nil); err != nil {
		return nil, err
	}
	return finish(c, o, res, t0), nil
}

// scanKubelet diagnoses a cluster without node_exporter: its hosts are
// inferred from the container series (kubelet.go) and every one is
// judged, the pre-filter's aggregates being joined to hosts through
// node_uname_info, which it lacks.
func scanKubelet(ctx context.Context, c *prom.Client, o Options, res *Result, t0 time.Time) (*Result, error) {
	hosts, n, k, err := kubeletHosts(ctx, c, o.Match, res.From, res.To)
	if err != nil {
		return nil, err
	}
	res.Kubelet = k
	for _, h := range hosts {
		res.Instances = append(res.Instances, &Instance{Instance: h, Labels: map[string]string{}, Suspect: true})
	}
	res.Cost.ScanQueries = c.Stats().Queries
	res.Cost.ScanSeconds = time.Since(t0).Seconds()
	if err := diagnoseSuspects(ctx, c, o, res, n); err != nil {
		return nil, err
	}
	return finish(c, o, res, t0), nil
}

// finish ranks the judged instances and correlates their findings.
func finish(c *prom.Client, o Options, res *Result, t0 time.Time) *Result {
	rank(res.Instances)
	res.Correlation = Correlate(res.Instances, append([]string{"release"}, o.By...))
	res.Warnings = c.Warnings()
	res.Cost.Stats = c.Stats()
	res.Cost.DurationSeconds = time.Since(t0).Seconds()
	return res
}

// namesExporters reports whether a --match selector has matchers on job
// or instance, which diagnose.ContainerMatch leaves out.
func namesExporters(match string) bool {
	all := strings.ReplaceAll(promql.Matchers(match), " ", "")
	if all == "" {
		return false
	}
	return strings.ReplaceAll(diagnose.ContainerMatch(match), " ", "") != "{"+all+"}"
}

func matchText(m string) string {
	if promql.Matchers(m) == "" {
		return ""
	}
	return "{" + promql.Matchers(m) + "}"
}

// Daily evaluates expr (an expression of a range selector's window,
// aggregated by instance) over each UTC day in the range and over the day
// so far, the latter last: one range query at midnights plus one instant
// query. It returns the values per instance.
func Daily(ctx context.Context, c *prom.Client, expr func(window string) string, end time.Time, r time.Duration) (map[string][]float64, error) {
	mid := end.UTC().Truncate(24 * time.Hour)
	out := map[string][]float64{}
	start := mid.Add(-r).Truncate(24 * time.Hour).Add(24 * time.Hour)
	if !start.After(mid) {
		ss, err := c.QueryRange(ctx, expr("1d"), start, mid, 24*time.Hour)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			inst := s.Labels["instance"]
			for _, p := range s.Points {
				out[inst] = append(out[inst], p.V)
			}
		}
	}
	if today := end.Sub(mid); today >= time.Minute {
		v, err := c.Query(ctx, expr(promDur(today)), end)
		if err != nil {
			return nil, err
		}
		for _, s := range v {
			inst := s.Labels["instance"]
			out[inst] = append(out[inst], s.Value)
		}
	}
	return out, nil
}

// instanceLabels reads each instance's kernel release (node_uname_info)
// and the --by labels (from any of its memory series).
func instanceLabels(ctx context.Context, c *prom.Client, sh *sharder, end time.Time, r time.Duration, by []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	set := func(inst, k, v string) {
		if inst == "" || v == "" {
			return
		}
		if out[inst] == nil {
			out[inst] = map[string]string{}
		}
		out[inst][k] = v
	}
	err := sh.each(ctx, func(ctx context.Context, match string) error {
		v, err := c.Query(ctx, "last_over_time("+promql.Selector("node_uname_info", match)+"["+promDur(r)+"])", end)
		for _, s := range v {
			set(s.Labels["instance"], "release", s.Labels["release"])
			for _, b := range by {
				set(s.Labels["instance"], b, s.Labels[b])
			}
		}
		return err
	})
	if err != nil || len(by) == 0 {
		return out, err
	}
	err = sh.each(ctx, func(ctx context.Context, match string) error {
		v, err := c.Query(ctx, "group by (instance, "+strings.Join(by, ", ")+") (last_over_time("+promql.Selector("node_memory_MemTotal_bytes", match)+"["+promDur(r)+"]))", end)
		for _, s := range v {
			for _, b := range by {
				set(s.Labels["instance"], b, s.Labels[b])
			}
		}
		return err
	})
	return out, err
}

// runAll runs tasks, at most workers at a time, and returns the first
// error; the tasks not started by then are skipped.
func runAll(parent context.Context, workers int, tasks []func() error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	next := make(chan func() error)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range min(max(1, workers), len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				// A task handed over as the context ended is skipped: the
				// feeder's select picks at random when a worker waits and
				// the context is done at once.
				if ctx.Err() != nil {
					continue
				}
				if err := t(); err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, t := range tasks {
		select {
		case next <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return parent.Err()
}

// batchSize is how many suspects one range query fetches.
const batchSize = 8

// diagnoseSuspects fetches the suspects' full ranges, a batch of
// instances per query, and runs the rules on each. With kubelet (a
// cluster without node_exporter, see kubelet.go) the suspects are hosts
// of container series only: those are fetched, and the host rules are
// reported as not evaluated.
func diagnoseSuspects(ctx context.Context, c *prom.Client, o Options, res *Result, kubelet *nodes) error {
	var sus []*Instance
	for _, in := range res.Instances {
		if in.Suspect {
			sus = append(sus, in)
		}
	}
	res.Suspects = len(sus)
	var done int64
	if o.Checkpoint != nil {
		fetch := sus[:0:0]
		for _, in := range sus {
			if o.Checkpoint.restore(in) {
				res.Resumed++
			} else {
				fetch = append(fetch, in)
			}
		}
		sus, done = fetch, int64(res.Resumed)
		if o.Progress != nil && done > 0 {
			o.Progress(done, int64(res.Suspects))
		}
	}
	names := diagnose.WindowSeries(diagnose.Rules())
	sort.Strings(names)
	re := strings.Join(names, "|")
	containers := kubelet != nil
	if len(sus) > 0 && !containers {
		var err error
		if containers, err = HasContainers(ctx, c, o.Match, res.From, res.To); err != nil {
			return err
		}
	}
	jobs := make(chan []*Instance)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range min(o.Workers, max(1, (len(sus)+batchSize-1)/batchSize)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range jobs {
				var insts []string
				for _, in := range batch {
					insts = append(insts, in.Instance)
				}
				var ws map[string]*sample.Window
				var err error
				if kubelet != nil {
					ws = map[string]*sample.Window{}
					err = fetchContainers(ctx, c, kubelet.only(insts), o.Match, res.From, res.To, o.Step, ws)
				} else {
					ws, err = FetchWindows(ctx, c, insts, o.Match, re, res.From, res.To, o.Step, containers)
				}
				for _, in := range batch {
					if err != nil {
						in.Error = err.Error()
						continue
					}
					w := ws[in.Instance]
					if w == nil {
						w = &sample.Window{Instance: in.Instance, From: res.From, To: res.To, Step: o.Step}
					}
					in.Series = len(w.Series)
					rep := diagnose.Run(diagnose.Data{Window: w, Source: "prometheus"})
					rep.FitPrometheus(c.URL(), in.Instance)
					if kubelet != nil {
						NoNodeExporter(rep)
						in.NotEvaluated = rep.Coverage.NotEvaluated
					}
					in.Findings = rep.Findings
					in.Notes = rep.Notes
					delete(ws, in.Instance) // let the window go
				}
				cerr := o.Checkpoint.add(batch)
				mu.Lock()
				if err != nil && firstErr == nil && ctx.Err() != nil {
					firstErr = err
				}
				if cerr != nil && firstErr == nil {
					firstErr = cerr
				}
				done += int64(len(batch))
				if o.Progress != nil {
					o.Progress(done, int64(res.Suspects))
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < len(sus); i += batchSize {
		jobs <- sus[i:min(len(sus), i+batchSize)]
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

// dropLabels are target labels that name the instance, not the series.
var dropLabels = map[string]bool{"instance": true, "job": true, prom.MetricNameLabel: true}

// FetchWindows reads the instances' series the rules read (re: a regexp
// of their names), over [from, to] every step, one window per instance,
// in one range query; then, with containers (see HasContainers), the
// Kubernetes containers on their nodes (cadvisor and kube-state-metrics,
// see containers.go) in four more.
func FetchWindows(ctx context.Context, c *prom.Client, instances []string, match, re string, from, to time.Time, step time.Duration, containers bool) (map[string]*sample.Window, error) {
	out := map[string]*sample.Window{}
	if err := fetchSeries(ctx, c, instances, match, re, from, to, step, out); err != nil {
		return nil, err
	}
	if !containers {
		return out, nil
	}
	n, err := hostNodes(ctx, c, instances, match, from, to)
	if err != nil {
		return nil, err
	}
	if err := fetchContainers(ctx, c, n, match, from, to, step, out); err != nil {
		return nil, err
	}
	return out, nil
}

// fetchSeries reads the instances' series into out in one range query or,
// when the server refuses it for a limit on the series or samples one
// query may touch (QueryRange already halves the range for one on points)
// or does not answer it within --prometheus-timeout, in two halves of the
// instances, each again, down to one instance. A query of several
// instances that times out is split at once, not sent whole again: it
// would take as long again (a Prometheus on two-hour blocks, loaded, took
// more than 3 s for eight hosts' 14 days). One instance's query is retried
// as any other.
func fetchSeries(ctx context.Context, c *prom.Client, instances []string, match, re string, from, to time.Time, step time.Duration, out map[string]*sample.Window) error {
	var alts []string
	for _, i := range instances {
		alts = append(alts, regexp.QuoteMeta(i))
	}
	expr := promql.Selector("", match, `__name__=~"`+re+`"`, `instance=~"`+escape(strings.Join(alts, "|"))+`"`)
	qctx := ctx
	if len(instances) > 1 {
		qctx = prom.Splittable(ctx)
	}
	ss, err := c.QueryRange(qctx, expr, from, to, step)
	if err != nil && (prom.IsLimit(err) || prom.IsTimeout(err)) && len(instances) > 1 && ctx.Err() == nil {
		c.Split()
		h := len(instances) / 2
		if err := fetchSeries(ctx, c, instances[:h], match, re, from, to, step, out); err != nil {
			return err
		}
		return fetchSeries(ctx, c, instances[h:], match, re, from, to, step, out)
	}
	if err != nil {
		return err
	}
	for _, s := range ss {
		inst := s.Labels["instance"]
		w := out[inst]
		if w == nil {
			w = &sample.Window{Instance: inst, From: from, To: to, Step: step}
			out[inst] = w
		}
		var nv []string
		for k, v := range s.Labels {
			if !dropLabels[k] {
				nv = append(nv, string(k), string(v))
			}
		}
		ser := &sample.Series{Name: s.Labels[prom.MetricNameLabel], Labels: sample.L(nv...), Points: make([]sample.Point, len(s.Points))}
		for i, p := range s.Points {
			ser.Points[i] = sample.Point{T: p.T, V: p.V}
		}
		w.Add(ser)
	}
	return nil
}

func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// rank orders instances: worst finding first, then more findings, then the
// pre-filter's score.
func rank(ins []*Instance) {
	for _, in := range ins {
		in.Severity = ""
		for _, f := range in.Findings {
			if f.Severity.Rank() > in.Severity.Rank() {
				in.Severity = f.Severity
			}
		}
	}
	sort.SliceStable(ins, func(i, j int) bool {
		a, b := ins[i], ins[j]
		if a.Severity.Rank() != b.Severity.Rank() {
			return a.Severity.Rank() > b.Severity.Rank()
		}
		if len(a.Findings) != len(b.Findings) {
			return len(a.Findings) > len(b.Findings)
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.Instance < b.Instance
	})
}
