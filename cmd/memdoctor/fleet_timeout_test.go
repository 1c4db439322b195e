package main

// A Prometheus too slow to answer the scan's aggregates over the whole
// fleet within --prometheus-timeout (at 10,000 hosts on two-hour blocks an
// aggregate took more than 60 s), or a batch of suspects' full ranges (a
// loaded Prometheus on two-hour blocks took more than 3 s for eight
// hosts): the scan asks them again for halves of the instances, at once,
// instead of sending the same query whole again.

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
)

// slowProxy serves target on loopback, holding each query's answer
// (instant or range) for perSeries times the series in it before its
// headers go out: an engine whose time grows with the series a query
// touches.
func slowProxy(t *testing.T, target string, perSeries time.Duration) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Header.Del("Accept-Encoding") // plain JSON, to count its series
	}}
	rp.ModifyResponse = func(resp *http.Response) error {
		if p := resp.Request.URL.Path; p != "/api/v1/query" && p != "/api/v1/query_range" {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		select {
		case <-time.After(time.Duration(bytes.Count(b, []byte(`"metric":`))) * perSeries):
		case <-resp.Request.Context().Done():
		}
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

func TestFleetScanSplitsAggregatesThatTimeOut(t *testing.T) {
	if testing.Short() {
		t.Skip("scans a 60-host fleet in Prometheus twice (a minute)")
	}
	// Mostly waits (the proxy holds the answers). The fleet's other
	// tests, which start a Prometheus on the same data, are not parallel:
	// they have all ended when this one starts.
	t.Parallel()
	dir, m, _ := sharedFleet(t)
	p := startPrometheus(t, dir, "")
	until := m.End.Format(time.RFC3339)
	scan := func(url string, extra ...string) *fleet.Result {
		t.Helper()
		args := append([]string{"diagnose", "--prometheus", url, "--until", until, "--range", "14d", "--json"}, extra...)
		out, errOut, code := runBin(t, args...)
		if code != 0 {
			t.Fatalf("diagnose --prometheus %s %q exited %d: %s", url, extra, code, errOut)
		}
		var res fleet.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return &res
	}
	direct := scan(p.url)
	// 60 hosts' aggregate held 3.6 s, past the 3-second timeout; half of
	// them 1.8 s (each half again while it times out). A batch of eight
	// suspects' full ranges (about nine series a host) is held 4.3 s, four
	// hosts' 2.2 s: each batch is split too, and every suspect still
	// judged (before the split, all their batches gave up after three
	// retries and the suspects had no findings).
	slow := scan(slowProxy(t, p.url, 60*time.Millisecond), "--prometheus-timeout", "3s", "--prometheus-retries", "3")
	if slow.Cost.Splits == 0 {
		t.Errorf("no query split, yet every aggregate of the whole fleet takes longer than the timeout")
	}
	if len(slow.Instances) != len(m.Hosts) {
		t.Fatalf("%d instances through the slow engine, the fleet has %d", len(slow.Instances), len(m.Hosts))
	}
	want, got := verdicts(direct), verdicts(slow)
	errs := map[string]string{}
	for _, in := range slow.Instances {
		errs[in.Instance] = in.Error
	}
	for _, h := range m.Hosts {
		if !slices.Equal(want[h.Instance], got[h.Instance]) {
			t.Errorf("%s: %v through the slow engine (%q), %v directly", h.Instance, got[h.Instance], errs[h.Instance], want[h.Instance])
		}
	}
	t.Logf("%d queries, %d split, %.1f s through the slow engine", slow.Cost.Queries, slow.Cost.Splits, slow.Cost.DurationSeconds)
}
