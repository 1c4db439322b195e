package probe

// The load is a closed loop of workers (-c) sharing one pace: request i of
// a run is due at start + i/rate, so the total rate is capped however the
// workers are scheduled, and with no rate each worker sends its next
// request as soon as its last is answered. A run ends after an exact count
// of requests or when its duration is over, or early when the target dies
// or the context ends. The requests are Go's own HTTP client (chunked
// bodies, TLS, redirects as a real client does). Every request's latency
// and status is kept, so percentiles are computed exactly from the raw
// latencies, not from a bucketed histogram. Memory comes from smaps_rollup:
// it walks the target's page tables under its mmap lock, so sampling much
// faster than every 100 ms would disturb the very process being measured.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memdoctor/memdoctor/internal/httpsafe"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/redact"
)

// Options configure a run.
type Options struct {
	URL         string
	PID         int
	Requests    int
	Concurrency int
	// Duration, when set, bounds the run by time and Requests is ignored.
	Duration time.Duration
	// Rate caps the total request rate per second (0: no cap).
	Rate    float64
	Warmup  int
	Timeout time.Duration
	// Interval between memory samples (default 250 ms).
	Interval time.Duration
	// Headers are extra "Name: value" request headers.
	Headers []string
	Label   string
	// Progress, when set, is called with the requests done and the total
	// (for a duration run: elapsed and total milliseconds).
	Progress func(done, total int64)
}

// ErrTargetGone is returned when the target process does not exist or
// exits during the run.
var ErrTargetGone = errors.New("target process is gone")

// Run drives the load and samples the target's memory. The error is
// non-nil only when no result could be made (bad options, an unreachable
// URL, a missing or unreadable process); failed requests are counted in
// the result instead.
func Run(ctx context.Context, fsys procfs.FS, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Interval <= 0 {
		o.Interval = 250 * time.Millisecond
	}
	comm, err := fsys.ProcComm(o.PID)
	if err != nil {
		return nil, targetError(o.PID, err)
	}
	base, err := readMem(fsys, o.PID)
	if err != nil {
		return nil, targetError(o.PID, err)
	}
	if err := preflight(ctx, o); err != nil {
		return nil, err
	}
	res := &Result{
		Kind: Kind, Version: Version, Label: o.Label,
		Settings: o.settings(),
		Target:   Target{PID: o.PID, Comm: comm},
	}
	base.Phase, base.Seconds = PhaseBaseline, 0
	res.MemSamples = append(res.MemSamples, base)

	if o.Warmup > 0 {
		w := o
		w.Requests, w.Duration, w.Progress = o.Warmup, 0, nil
		if _, err := drive(ctx, w); err != nil {
			return nil, err
		}
	}

	res.Start = time.Now()
	sctx, stop := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		samples []MemSample
		sErr    error
	)
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	wg.Go(func() {
		samples, sErr = sampleLoop(sctx, fsys, o.PID, o.Interval, res.Start)
		if sErr != nil {
			stopLoad() // the target died: stop the load, waits and requests alike
		}
	})
	rec, err := drive(lctx, o)
	res.End = time.Now()
	stop()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if sErr != nil {
		return nil, targetError(o.PID, sErr)
	}
	res.MemSamples = append(res.MemSamples, samples...)
	if after, err := readMem(fsys, o.PID); err == nil {
		after.Phase, after.Seconds = PhaseAfter, res.End.Sub(res.Start).Seconds()
		res.MemSamples = append(res.MemSamples, after)
	}
	res.ElapsedSeconds = rec.elapsed.Seconds()
	res.LatenciesSeconds = rec.latencies
	res.Requests = rec.counts()
	res.Summarize()
	res.Notes = notes(res)
	return res, nil
}

func (o *Options) check() error {
	switch {
	case o.PID <= 0:
		return fmt.Errorf("--pid %d: want the process id of the server behind the URL", o.PID)
	case o.Concurrency < 1:
		return fmt.Errorf("-c %d: want 1 or more workers", o.Concurrency)
	case o.Duration <= 0 && o.Requests < 1:
		return fmt.Errorf("-n %d: want 1 or more requests (or a --duration)", o.Requests)
	case o.Duration < 0, o.Rate < 0, o.Warmup < 0, o.Timeout < 0, o.Interval < 0:
		return errors.New("--duration, --rate, --warmup, --timeout and --interval must not be negative")
	}
	if !strings.Contains(o.URL, "://") {
		// host:port/path without a scheme: url.Parse rejects it or reads
		// the host as a scheme.
		if u, err := url.Parse("http://" + o.URL); err == nil && u.Host != "" {
			return fmt.Errorf("--url %s has no scheme: add http:// (--url %s)", u.Redacted()[len("http://"):], u.Redacted())
		}
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url %q: want an http:// or https:// URL", redactURL(o.URL))
	}
	for _, h := range o.Headers {
		if k, _, ok := strings.Cut(h, ":"); !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--header %q: want \"Name: value\"", k)
		}
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	return nil
}

func (o *Options) settings() Settings {
	s := Settings{
		URL: redactURL(o.URL), Method: http.MethodGet, Requests: o.Requests, Concurrency: o.Concurrency,
		DurationSeconds: o.Duration.Seconds(), RatePerSecond: o.Rate, Warmup: o.Warmup,
		TimeoutSeconds: o.Timeout.Seconds(), IntervalSeconds: o.Interval.Seconds(),
	}
	if o.Duration > 0 {
		s.Requests = 0
	}
	for _, h := range o.Headers {
		k, _, _ := strings.Cut(h, ":")
		s.HeaderNames = append(s.HeaderNames, strings.TrimSpace(k))
	}
	return s
}

// redactURL is the URL as saved and shown: no password, no token.
func redactURL(s string) string { return redact.URL(s) }

// preflight makes one request so an unreachable URL is a clear error
// instead of a run made only of failures.
func preflight(ctx context.Context, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL, nil)
	if err != nil {
		return fmt.Errorf("--url %s: %w", redactURL(o.URL), err)
	}
	for _, h := range o.Headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	// A connection of its own, closed after the answer: an idle keep-alive
	// connection would hold a one-connection-at-a-time server hostage.
	req.Close = true
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: http.ProxyFromEnvironment},
		CheckRedirect: httpsafe.CheckRedirect}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	err = redact.Err(err) // net/http names the URL with its query
	if errors.Is(err, httpsafe.ErrRedirect) {
		return fmt.Errorf("--url %s: %w (probe the URL it redirects to, if that is the server meant)", redactURL(o.URL), errors.Unwrap(err))
	}
	if err != nil {
		return fmt.Errorf("cannot reach %s: %w (is the server running and listening there?)", redactURL(o.URL), errors.Unwrap(err))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close() // fully read; nothing to report
	return nil
}

// recorder keeps every request's latency and status. Workers call it
// concurrently.
type recorder struct {
	mu        sync.Mutex
	latencies []float64
	status    map[string]int
	done      atomic.Int64
	total     int64
	progress  func(done, total int64)
	elapsed   time.Duration
}

// add records one request: its latency in seconds and its status code, 0
// when no answer came.
func (r *recorder) add(latency float64, code int) {
	key := "error"
	if code > 0 {
		key = strconv.Itoa(code)
	}
	r.mu.Lock()
	r.latencies = append(r.latencies, latency)
	r.status[key]++
	r.mu.Unlock()
	n := r.done.Add(1)
	if r.progress != nil && r.total > 0 {
		r.progress(n, r.total)
	}
}

func (r *recorder) counts() Requests {
	q := Requests{Total: len(r.latencies), Status: r.status}
	for k, n := range r.status {
		code, err := strconv.Atoi(k)
		switch {
		case err != nil:
			q.Errors += n
		case code >= 200 && code <= 299:
			q.OK += n
		default:
			q.NotOK += n
		}
	}
	return q
}

// pace hands out the run's requests to its workers: next returns when
// the next one may be sent, or false when the run is over.
type pace struct {
	start    time.Time
	deadline time.Time     // zero for a count
	count    int64         // requests in a counted run
	every    time.Duration // time between two requests at the capped rate; 0 for none
	issued   atomic.Int64
}

// next claims the next request and waits until it is due. It returns
// false, at once or after the wait, when the run is over: the count is
// reached, the request would be due past the deadline, or the context
// ended (as it does when the target dies).
func (p *pace) next(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	i := p.issued.Add(1) - 1
	if p.deadline.IsZero() && i >= p.count {
		return false
	}
	due := p.start
	if p.every > 0 {
		due = p.start.Add(time.Duration(i) * p.every)
	}
	if !p.deadline.IsZero() && (!due.Before(p.deadline) || !time.Now().Before(p.deadline)) {
		return false
	}
	if wait := time.Until(due); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	return ctx.Err() == nil
}

// drive sends o's load, stopping early when ctx ends, and returns what it
// recorded.
func drive(ctx context.Context, o Options) (*recorder, error) {
	rec := &recorder{status: map[string]int{}, progress: o.Progress, total: int64(o.Requests)}
	hr, err := newHTTPRunner(o)
	if err != nil {
		return nil, err
	}
	defer hr.client.CloseIdleConnections()
	start := time.Now()
	p := &pace{start: start, count: int64(o.Requests)}
	if o.Rate > 0 {
		// At most a day between requests: a slower rate would overflow
		// the schedule's arithmetic, and means nothing for a probe.
		p.every = time.Duration(min(float64(time.Second)/o.Rate, float64(24*time.Hour)))
	}
	workers := o.Concurrency
	if o.Duration > 0 {
		p.deadline = start.Add(o.Duration)
		rec.total = 0
		if o.Progress != nil {
			done := make(chan struct{})
			defer close(done)
			go func() {
				tick := time.NewTicker(200 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						o.Progress(time.Since(start).Milliseconds(), o.Duration.Milliseconds())
					}
				}
			}()
		}
	} else {
		workers = min(workers, o.Requests) // no idle workers
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p.next(ctx) {
				t0 := time.Now()
				code := hr.get(ctx)
				if code == 0 && ctx.Err() != nil {
					return // cut short by the caller, not failed by the server
				}
				rec.add(time.Since(t0).Seconds(), code)
			}
		})
	}
	wg.Wait()
	rec.elapsed = time.Since(start)
	return rec, nil
}

// httpRunner is one GET of the probed URL: what every worker runs.
type httpRunner struct {
	client  *http.Client
	url     string
	headers http.Header
}

func newHTTPRunner(o Options) (*httpRunner, error) {
	h := http.Header{}
	for _, kv := range o.Headers {
		name, value, ok := strings.Cut(kv, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("--header %q: want \"Name: value\"", kv)
		}
		h.Add(name, value)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = max(o.Concurrency, 2)
	return &httpRunner{client: &http.Client{Transport: tr, Timeout: o.Timeout, CheckRedirect: httpsafe.CheckRedirect}, url: o.URL, headers: h}, nil
}

// get sends one request and reads the whole answer. It returns the status
// code, or 0 when no whole answer came.
func (h *httpRunner) get(ctx context.Context) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return 0
	}
	for k, v := range h.headers {
		req.Header[k] = v
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close() // read to the end (or failed): nothing more to learn
	if err != nil {
		return 0
	}
	return resp.StatusCode
}

// readMem reads the target's USS (private clean + private dirty + private
// hugetlb), PSS and RSS from smaps_rollup.
func readMem(fsys procfs.FS, pid int) (MemSample, error) {
	kv, err := fsys.ProcSmapsRollup(pid)
	if err != nil {
		return MemSample{}, err
	}
	return MemSample{
		USSBytes: kv.Value("Private_Clean") + kv.Value("Private_Dirty") + kv.Value("Private_Hugetlb"),
		PSSBytes: kv.Value("Pss"),
		RSSBytes: kv.Value("Rss"),
	}, nil
}

// sampleLoop reads the target's memory every interval until ctx ends. It
// returns early with an error when the target can no longer be read.
func sampleLoop(ctx context.Context, fsys procfs.FS, pid int, every time.Duration, start time.Time) ([]MemSample, error) {
	var out []MemSample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s, err := readMem(fsys, pid)
		if err != nil {
			return out, err
		}
		s.Phase, s.Seconds = PhaseRun, time.Since(start).Seconds()
		out = append(out, s)
		select {
		case <-ctx.Done():
			return out, nil
		case <-tick.C:
		}
	}
}

func targetError(pid int, err error) error {
	switch {
	case procfs.IsNotExist(err):
		return fmt.Errorf("process %d: %w (is the server still running? give the pid of the process serving --url)", pid, ErrTargetGone)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("process %d: cannot read its memory (%w): run memdoctor as the process's user or as root", pid, err)
	}
	return fmt.Errorf("process %d: %w", pid, err)
}

func notes(r *Result) []string {
	var n []string
	if r.Memory.Samples < 5 {
		n = append(n, fmt.Sprintf("only %d memory samples during the run: make it longer (-n, --duration) or sample faster (--interval) for a stable median", r.Memory.Samples))
	}
	if r.Requests.Errors > 0 {
		n = append(n, fmt.Sprintf("%d of %d requests got no answer (refused, reset or timed out); their latency is the time until the failure", r.Requests.Errors, r.Requests.Total))
	}
	if r.Requests.NotOK > 0 {
		n = append(n, fmt.Sprintf("%d of %d requests answered with a non-2xx status", r.Requests.NotOK, r.Requests.Total))
	}
	return n
}

// RunAt is Run on the processes of the host whose /proc and /sys are
// below root ("/" for this host).
func RunAt(ctx context.Context, root string, o Options) (*Result, error) {
	return Run(ctx, procfs.NewFS(root), o)
}
