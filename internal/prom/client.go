// Package prom is a small client of the Prometheus HTTP API (instant and
// range queries), which Thanos, Mimir, Cortex and VictoriaMetrics serve
// too. It retries what is worth retrying with exponential backoff, sends a
// bearer token or basic-auth credentials read from files, trusts an extra
// CA, surfaces the server's partial-data warnings, and counts what it
// costs: queries sent and bytes received.
package prom

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memdoctor/memdoctor/internal/httpsafe"
	"github.com/memdoctor/memdoctor/internal/redact"
	"github.com/memdoctor/memdoctor/internal/safeio"
)

// Options configure a Client. Secrets are read from files so they never
// appear in a command line.
type Options struct {
	// URL is the server's base URL (https://prom.example:9090, or a path
	// prefix such as https://mimir.example/prometheus).
	URL string
	// BearerTokenFile holds a bearer token (surrounding space trimmed).
	BearerTokenFile string
	// Username and PasswordFile give basic auth.
	Username     string
	PasswordFile string
	// CAFile is a PEM bundle trusted in addition to the system's.
	CAFile string
	// InsecureSkipVerify turns certificate checks off (test setups only).
	InsecureSkipVerify bool
	// Timeout bounds each HTTP request (default 60 s); Retries is how many
	// times a failed request is sent again (default 3; negative: none).
	Timeout time.Duration
	Retries int
	// Backoff is the first retry delay, doubled each time with jitter
	// (default 500 ms).
	Backoff time.Duration
	// Transport replaces the HTTP transport (tests); auth and TLS options
	// still apply to requests.
	Transport http.RoundTripper
}

// Stats is what a client has cost so far.
type Stats struct {
	// Queries is the number of API requests that got an answer (retries
	// included); Retries the number of requests sent again.
	Queries int64 `json:"queries"`
	Retries int64 `json:"retries"`
	// Splits counts queries the server refused for a limit and that were
	// asked again in parts (a range in halves, instances in halves).
	Splits int64 `json:"splits,omitempty"`
	// WireBytes were received on the connection (compressed), BodyBytes
	// decoded.
	WireBytes int64 `json:"wire_bytes"`
	BodyBytes int64 `json:"body_bytes"`
	// Samples returned by range queries, and series.
	Samples int64 `json:"samples"`
	Series  int64 `json:"series"`
	// Duration is the time spent waiting for answers, summed over requests.
	Duration time.Duration `json:"-"`
}

// Client talks to one Prometheus-compatible server. It is safe for
// concurrent use.
type Client struct {
	base     *url.URL
	hc       *http.Client
	auth     func(*http.Request)
	retries  int
	backoff  time.Duration
	queries  atomic.Int64
	retried  atomic.Int64
	splits   atomic.Int64
	wire     atomic.Int64
	body     atomic.Int64
	samples  atomic.Int64
	series   atomic.Int64
	waitedNs atomic.Int64

	mu       sync.Mutex
	warnings []string
	seenWarn map[string]bool
}

// New checks the options and builds a client (it sends nothing yet).
func New(o Options) (*Client, error) {
	if o.URL == "" {
		return nil, errors.New("no Prometheus URL given")
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http(s)://HOST[:PORT][/PREFIX]", redact.URL(o.URL))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 3
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	c := &Client{base: u, retries: o.Retries, backoff: o.Backoff, auth: func(*http.Request) {}, seenWarn: map[string]bool{}}
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DisableCompression = true // we ask for gzip ourselves, to count wire bytes
		t.MaxIdleConnsPerHost = 8
		if o.CAFile != "" || o.InsecureSkipVerify {
			cfg := &tls.Config{InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // asked for explicitly
			if o.CAFile != "" {
				pem, err := safeio.ReadFile(o.CAFile, safeio.Config)
				if err != nil {
					return nil, fmt.Errorf("--prometheus-ca: %w", err)
				}
				pool, err := x509.SystemCertPool()
				if err != nil || pool == nil {
					pool = x509.NewCertPool()
				}
				if !pool.AppendCertsFromPEM(pem) {
					return nil, fmt.Errorf("--prometheus-ca %s: no PEM certificate in it", o.CAFile)
				}
				cfg.RootCAs = pool
			}
			t.TLSClientConfig = cfg
		}
		tr = t
	}
	c.hc = &http.Client{Transport: tr, Timeout: o.Timeout, CheckRedirect: httpsafe.CheckRedirect}
	switch {
	case o.BearerTokenFile != "" && (o.Username != "" || o.PasswordFile != ""):
		return nil, errors.New("give either a bearer token file or basic auth, not both")
	case o.BearerTokenFile != "":
		b, err := safeio.ReadFile(o.BearerTokenFile, safeio.Config)
		if err != nil {
			return nil, fmt.Errorf("bearer token file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return nil, fmt.Errorf("bearer token file %s is empty", o.BearerTokenFile)
		}
		c.auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	case o.Username != "" || o.PasswordFile != "":
		if o.Username == "" {
			return nil, errors.New("a password file needs a user name (--prometheus-user)")
		}
		pw := ""
		if o.PasswordFile != "" {
			b, err := safeio.ReadFile(o.PasswordFile, safeio.Config)
			if err != nil {
				return nil, fmt.Errorf("password file: %w", err)
			}
			pw = strings.TrimRight(string(b), "\r\n")
		}
		user := o.Username
		c.auth = func(r *http.Request) { r.SetBasicAuth(user, pw) }
	}
	return c, nil
}

// URL is the server's base URL as shown: without its user information,
// and with the values of parameters named like credentials masked.
func (c *Client) URL() string {
	u := *c.base
	u.User = nil
	return redact.URL(u.String())
}

// Split counts a query asked again in parts after a limit refused it
// whole (Stats.Splits), for callers that split by instance.
func (c *Client) Split() { c.splits.Add(1) }

// Answers is how many requests got an answer so far (Stats().Queries).
func (c *Client) Answers() int64 { return c.queries.Load() }

// Stats returns what the client has cost so far.
func (c *Client) Stats() Stats {
	return Stats{Queries: c.queries.Load(), Retries: c.retried.Load(), Splits: c.splits.Load(), WireBytes: c.wire.Load(), BodyBytes: c.body.Load(),
		Samples: c.samples.Load(), Series: c.series.Load(), Duration: time.Duration(c.waitedNs.Load())}
}

// nonFinite drops NaN and infinite values of an answer with a warning: a
// stale marker or a division by zero in a query is valid PromQL, but no
// memory size, counter or rate memdoctor judges can be NaN, and JSON cannot
// hold them.
func (c *Client) nonFinite(expr string, n int) {
	if n > 0 {
		c.warn([]string{fmt.Sprintf("%d values of the answer to %s are NaN or infinite: dropped", n, expr)})
	}
}

// Warnings returns the distinct warnings servers sent with their answers
// (partial data from a store that did not answer, a query limit hit), in
// the order first seen.
func (c *Client) Warnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.warnings...)
}

func (c *Client) warn(ws []string) {
	if len(ws) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range ws {
		if !c.seenWarn[w] {
			c.seenWarn[w] = true
			c.warnings = append(c.warnings, w)
		}
	}
}

// APIError is an answer the server gave with status "error": a bad query
// or one it could not run. It is not retried.
type APIError struct {
	Status    int
	ErrorType string
	Message   string
	Query     string
}

// Limit reports whether the server refused the query for one of its
// limits on what a query may touch (Prometheus' samples in memory and
// points per series; VictoriaMetrics' -search.maxUniqueTimeseries,
// -search.maxSamplesPerQuery, -search.maxSamplesPerSeries and
// -search.maxPointsPerTimeseries; Thanos' and Mimir's series and chunk
// limits): the same question asked of fewer series or a shorter range
// may be answered.
func (e *APIError) Limit() bool {
	m := strings.ToLower(e.Message)
	for _, s := range limitMessages {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// limitMessages are what the engines say when a query passes a limit.
var limitMessages = []string{
	"would load too many samples",               // Prometheus
	"exceeded maximum resolution",               // Prometheus, points per series
	"the number of matching timeseries exceeds", // VictoriaMetrics
	"too many points for the given step",        // VictoriaMetrics
	"-search.maxsamplesperquery",                // VictoriaMetrics
	"-search.maxsamplesperseries",               // VictoriaMetrics
	"-search.maxuniquetimeseries",               // VictoriaMetrics
	"-search.maxpointspertimeseries",            // VictoriaMetrics
	"-search.maxseries",                         // VictoriaMetrics
	"limit exceeded",                            // Thanos, Mimir ("series limit exceeded", "chunks limit exceeded")
	"max number of series limit",                // Mimir
	"-search.maxquerylen",                       // VictoriaMetrics: a query too long (a part of the fleet named by its instances)
}

// seriesLimitMessages are refusals for the number of series one query
// touches, or for its length: a shorter range is refused as well, only
// fewer instances pass.
var seriesLimitMessages = []string{
	"the number of matching timeseries exceeds", // VictoriaMetrics
	"-search.maxuniquetimeseries",               // VictoriaMetrics
	"-search.maxquerylen",                       // VictoriaMetrics
	"series limit exceeded",                     // Thanos
	"max number of series limit",                // Mimir
}

// isSeriesLimit reports whether err is a refusal for the number of series.
func isSeriesLimit(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	m := strings.ToLower(ae.Message)
	for _, s := range seriesLimitMessages {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// timeoutError is a request the server did not answer within the
// client's timeout.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string { return e.err.Error() }
func (e *timeoutError) Unwrap() error { return e.err }

// IsTimeout reports whether err is a query the server did not answer in
// time: the request's timeout (--prometheus-timeout) passed, or the
// engine stopped the query at its own (Prometheus' --query.timeout,
// error type "timeout"; VictoriaMetrics' -search.maxQueryDuration).
func IsTimeout(err error) bool {
	var te *timeoutError
	if errors.As(err, &te) {
		return true
	}
	var ae *APIError
	return errors.As(err, &ae) && (ae.ErrorType == "timeout" || strings.Contains(strings.ToLower(ae.Message), "-search.maxqueryduration"))
}

type splittableKey struct{}

// Splittable marks the queries sent with ctx as ones the caller asks again
// in parts when they time out: such a timeout is returned at once (see
// IsTimeout), not retried whole, since the same query would take as long
// again.
func Splittable(ctx context.Context) context.Context {
	return context.WithValue(ctx, splittableKey{}, true)
}

// IsLimit reports whether err is a refusal for a limit (APIError.Limit).
func IsLimit(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Limit()
}

func (e *APIError) Error() string {
	q := e.Query
	if len(q) > 200 {
		q = q[:200] + "…"
	}
	return fmt.Sprintf("prometheus rejected the query (%d %s: %s); query: %s", e.Status, e.ErrorType, e.Message, q)
}

// Sample is one value of an instant query.
type Sample struct {
	Labels Labels
	Value  float64
}

// Series is one series of a range query.
type Series struct {
	Labels Labels
	Points []Point
}

// rangeSeries is one series of a range query's answer.
type rangeSeries struct {
	Metric Labels
	Values []Point
}

// Query runs an instant query at t.
func (c *Client) Query(ctx context.Context, expr string, t time.Time) ([]Sample, error) {
	form := url.Values{"query": {expr}, "time": {formatTime(t)}}
	a, err := c.call(ctx, "/api/v1/query", form, expr, 1)
	if err != nil {
		return nil, err
	}
	switch a.ResultType {
	case "vector":
		out := make([]Sample, 0, len(a.Series))
		dropped := 0
		for _, s := range a.Series {
			if len(s.Points) == 0 {
				continue // a native histogram: nothing memdoctor reads
			}
			if f := s.Points[0].V; math.IsNaN(f) || math.IsInf(f, 0) {
				dropped++
				continue
			}
			out = append(out, Sample{Labels: s.Metric, Value: s.Points[0].V})
		}
		c.nonFinite(expr, dropped)
		c.series.Add(int64(len(out)))
		return out, nil
	case "scalar":
		if a.Scalar == nil {
			return nil, fmt.Errorf("prometheus answer to %q: a scalar without its value", expr)
		}
		if f := a.Scalar.V; math.IsNaN(f) || math.IsInf(f, 0) {
			c.nonFinite(expr, 1)
			return []Sample{}, nil
		}
		return []Sample{{Labels: Labels{}, Value: a.Scalar.V}}, nil
	}
	return nil, fmt.Errorf("prometheus answered %q with a %s, want a vector", expr, a.ResultType)
}

// LabelValues lists the values of a label over [start, end] on the series
// that match selector; when the server refuses that for a limit on the
// series one query may touch (VictoriaMetrics' -search.maxUniqueTimeseries
// applies to it too), the values on every series, which it reads from its
// index alone.
func (c *Client) LabelValues(ctx context.Context, label, selector string, start, end time.Time) ([]string, error) {
	form := url.Values{"start": {formatTime(start)}, "end": {formatTime(end)}}
	path := "/api/v1/label/" + url.PathEscape(label) + "/values"
	what := "the values of " + label + " on " + selector
	if selector != "" {
		form.Set("match[]", selector)
	}
	a, err := c.call(ctx, path, form, what, 1)
	if err != nil && IsLimit(err) && selector != "" {
		form.Del("match[]")
		a, err = c.call(ctx, path, form, "the values of "+label, 1)
	}
	if err != nil {
		return nil, err
	}
	if a.ResultType != "strings" {
		return nil, fmt.Errorf("prometheus answered the label values of %s with a %s, want a list", label, a.ResultType)
	}
	return a.Values, nil
}

// MaxPointsPerSeries is Prometheus' limit on the points of one range query
// series; longer ranges are split into several requests.
const MaxPointsPerSeries = 11000

// QueryRange runs a range query from start to end every step, split into
// requests of at most MaxPointsPerSeries-1 steps each; the series of the
// parts are joined.
func (c *Client) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	if step <= 0 {
		return nil, errors.New("range query: step must be positive")
	}
	if end.Before(start) {
		return nil, fmt.Errorf("range query: end %s before start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	chunk := time.Duration(MaxPointsPerSeries-1) * step
	dropped := 0
	byKey := map[uint64]*Series{}
	var order []uint64
	for from := start; !from.After(end); from = from.Add(chunk + step) {
		to := from.Add(chunk)
		if to.After(end) {
			to = end
		}
		part, err := c.queryRangeSplit(ctx, expr, from, to, step)
		if err != nil {
			return nil, err
		}
		for _, s := range part {
			fp := s.Metric.hash()
			cur, ok := byKey[fp]
			if !ok {
				cur = &Series{Labels: s.Metric}
				byKey[fp] = cur
				order = append(order, fp)
			}
			// The finite points, kept in the decoded slice (one copy
			// less of the usual one-part answer).
			kept := s.Values[:0]
			for _, p := range s.Values {
				if f := p.V; math.IsNaN(f) || math.IsInf(f, 0) {
					dropped++
					continue
				}
				kept = append(kept, p)
			}
			if cur.Points == nil {
				cur.Points = kept
			} else {
				cur.Points = append(cur.Points, kept...)
			}
		}
	}
	c.nonFinite(expr, dropped)
	out := make([]Series, 0, len(order))
	for _, fp := range order {
		out = append(out, *byKey[fp])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels.String() < out[j].Labels.String() })
	return out, nil
}

// queryRangeSplit is queryRange, asked again in two halves of the range
// (each again, down to one step) when the server refuses it for a limit
// that a shorter range passes under (points or samples per query); a
// refusal for the number of series is returned as it is, for the caller
// to ask for fewer instances.
func (c *Client) queryRangeSplit(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]rangeSeries, error) {
	part, err := c.queryRange(ctx, expr, start, end, step)
	steps := end.Sub(start) / step
	if err == nil || !IsLimit(err) || isSeriesLimit(err) || steps < 2 {
		return part, err
	}
	c.splits.Add(1)
	mid := start.Add(steps / 2 * step)
	a, err := c.queryRangeSplit(ctx, expr, start, mid, step)
	if err != nil {
		return nil, err
	}
	b, err := c.queryRangeSplit(ctx, expr, mid.Add(step), end, step)
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil // QueryRange joins the series by labels
}

func (c *Client) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]rangeSeries, error) {
	form := url.Values{"query": {expr}, "start": {formatTime(start)}, "end": {formatTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	// The points a series can have: one a step from start to end (and one
	// more for the rounding of the times sent).
	steps := int(end.Sub(start)/step) + 2
	a, err := c.call(ctx, "/api/v1/query_range", form, expr, steps)
	if err != nil {
		return nil, err
	}
	if a.ResultType != "matrix" {
		return nil, fmt.Errorf("prometheus answered the range query %q with a %s, want a matrix", expr, a.ResultType)
	}
	m := make([]rangeSeries, 0, len(a.Series))
	var n int64
	for _, s := range a.Series {
		m = append(m, rangeSeries{Metric: s.Metric, Values: s.Points})
		n += int64(len(s.Points))
	}
	c.samples.Add(n)
	c.series.Add(int64(len(m)))
	return m, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)
}

// retryable reports whether a status is worth sending again.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusBadGateway ||
		status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout || status == http.StatusInternalServerError
}

// call posts a form to an API path and decodes the answer, keeping at most
// perSeries points a series, retrying network errors and retryable
// statuses.
func (c *Client) call(ctx context.Context, path string, form url.Values, expr string, perSeries int) (*apiAnswer, error) {
	var last error
	for attempt := 0; attempt <= c.retries; attempt++ {
		if attempt > 0 {
			c.retried.Add(1)
			d := c.backoff << (attempt - 1)
			d += time.Duration(rand.Int64N(int64(d)/2 + 1)) //nolint:gosec // jitter, not security
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w (after: %w)", ctx.Err(), last)
			case <-time.After(d):
			}
		}
		a, retry, err := c.once(ctx, path, form, expr, perSeries)
		if err == nil {
			return a, nil
		}
		last = err
		if !retry || ctx.Err() != nil {
			return nil, err
		}
		if ctx.Value(splittableKey{}) != nil && IsTimeout(err) {
			return nil, err // the caller asks again in parts
		}
	}
	return nil, fmt.Errorf("%w (gave up after %d retries)", last, c.retries)
}

func (c *Client) once(ctx context.Context, path string, form url.Values, expr string, perSeries int) (a *apiAnswer, retry bool, err error) {
	u := *c.base
	u.Path += path
	// Queries are POSTed (a long selector fits); Prometheus serves label
	// values on GET only (405 to a POST).
	method, reqBody := http.MethodPost, io.Reader(strings.NewReader(form.Encode()))
	if strings.HasPrefix(path, "/api/v1/label/") {
		// The URL's own parameters (a tenant's, say) stay, as they do on
		// a POST, beside the form's.
		q := u.Query()
		for k, v := range form {
			q[k] = v
		}
		method, reqBody, u.RawQuery = http.MethodGet, nil, q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reqBody)
	if err != nil {
		return nil, false, err
	}
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", "memdoctor")
	c.auth(req)
	t0 := time.Now()
	resp, err := c.hc.Do(req)
	defer func() { c.waitedNs.Add(int64(time.Since(t0))) }()
	if err != nil {
		err = redact.Err(err) // net/http names the URL with its query
		if errors.Is(err, httpsafe.ErrRedirect) {
			return nil, false, fmt.Errorf("prometheus at %s: %w (give the URL the redirect points to, if it is the server meant)", c.URL(), errors.Unwrap(err))
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, true, &timeoutError{fmt.Errorf("prometheus at %s did not answer in time: %w (raise --prometheus-timeout, or narrow --match/--range)", c.URL(), err)}
		}
		return nil, true, fmt.Errorf("cannot reach prometheus at %s: %w (check the URL and that the server runs)", c.URL(), err)
	}
	defer func() { _ = resp.Body.Close() }()
	c.queries.Add(1)
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, false, fmt.Errorf("prometheus at %s refused access (%s): check --prometheus-token-file or --prometheus-user/--prometheus-password-file", c.URL(), resp.Status)
	case http.StatusNotFound:
		return nil, false, fmt.Errorf("prometheus at %s: %s has no %s: is the URL the server's base (add the path prefix for Thanos/Mimir)?", c.URL(), redact.URL(u.Path), path)
	}
	wire := &countReader{r: resp.Body}
	var body io.Reader = wire
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return nil, true, fmt.Errorf("prometheus at %s: bad gzip answer: %w", c.URL(), err)
		}
		body = zr
	}
	// The answer is decoded as it streams (see stream.go): what is held is
	// what is kept of it, never the answer itself.
	dec := &countReader{r: io.LimitReader(body, maxAnswer+1)}
	var in io.Reader = dec
	if body != wire {
		in = &ratioReader{r: dec, wire: wire}
	}
	a, derr := decodeAnswer(in, perSeries, expr)
	c.wire.Add(wire.n)
	c.body.Add(dec.n)
	narrow := "narrow --match or --range, or raise --step"
	switch {
	case errors.Is(derr, errBomb):
		return nil, false, fmt.Errorf("prometheus at %s: the answer to %s expands more than %d-fold from gzip (%d MiB from %d KiB): a gzip bomb, not an answer", c.URL(), path, maxGzipRatio, dec.n>>20, wire.n>>10)
	case dec.n > maxAnswer:
		return nil, false, fmt.Errorf("prometheus at %s: the answer to %s decodes to more than %d MiB: %s", c.URL(), path, maxAnswer>>20, narrow)
	case errors.Is(derr, errBudget):
		return nil, false, fmt.Errorf("prometheus at %s: %w: %s", c.URL(), derr, narrow)
	case derr != nil && !errors.Is(derr, errSyntax):
		return nil, true, fmt.Errorf("prometheus at %s: reading the answer: %w", c.URL(), derr)
	}
	if derr != nil || a.Status == "" {
		if retryable(resp.StatusCode) {
			return nil, true, fmt.Errorf("prometheus at %s: %s", c.URL(), resp.Status)
		}
		snippet := "no status field"
		if derr != nil {
			snippet = derr.Error()
		}
		if len(snippet) > 120 {
			snippet = snippet[:120] + "…"
		}
		return nil, false, fmt.Errorf("%s does not answer like the Prometheus API (%s: %q)", c.URL(), resp.Status, snippet)
	}
	c.warn(a.Warnings)
	if a.Status != "success" {
		if retryable(resp.StatusCode) && a.ErrorType != "bad_data" && a.ErrorType != "execution" {
			return nil, true, fmt.Errorf("prometheus at %s: %s: %s", c.URL(), resp.Status, a.Error)
		}
		return nil, false, &APIError{Status: resp.StatusCode, ErrorType: a.ErrorType, Message: a.Error, Query: expr}
	}
	if a.Partial {
		c.warn([]string{fmt.Sprintf("the answer to %s is partial: the server says part of its data did not answer", expr)})
	}
	if a.Dropped > 0 {
		c.warn([]string{fmt.Sprintf("%d points of the answer to %s repeat or precede the time of the point before them in their series: dropped (a repeat replaces the value)", a.Dropped, expr)})
	}
	return a, false, nil
}

// A gzipped answer decodes to at most maxGzipRatio times its wire size,
// beyond its first gzipSlack bytes: Prometheus' JSON compresses about 4
// times (a fleet scan: 59.9 MB on the wire for 256 MB decoded), a gzip
// bomb 1,000 times.
const (
	maxGzipRatio = 100
	gzipSlack    = 64 << 20
)

var errBomb = errors.New("gzip bomb")

// ratioReader fails once the bytes it decoded outgrow those received on
// the wire by more than maxGzipRatio.
type ratioReader struct {
	r    *countReader
	wire *countReader
}

func (z *ratioReader) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if z.r.n > gzipSlack && z.r.n > maxGzipRatio*z.wire.n {
		return n, errBomb
	}
	return n, err
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
