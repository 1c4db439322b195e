package prom

// The client against Debian's real Prometheus, directly and behind a TLS
// gateway that demands credentials, fails now and then and marks answers
// partial (as Thanos or Mimir gateways do).

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func startPrometheus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr)
	// A test binary that dies (a crash, a timeout) takes its Prometheus along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	u := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r, err := http.Get(u + "/-/ready"); err == nil {
			_ = r.Body.Close()
			if r.StatusCode == 200 {
				return u
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus not ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAgainstPrometheus(t *testing.T) {
	u := startPrometheus(t)
	c, err := New(Options{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := c.Query(ctx, `label_replace(vector(42), "instance", "a", "", "")`, time.Now())
	if err != nil || len(v) != 1 || v[0].Value != 42 || v[0].Labels["instance"] != "a" {
		t.Fatalf("query: %v %+v", err, v)
	}
	end := time.Now().Truncate(time.Second)
	// 30 000 steps: three requests, joined.
	ss, err := c.QueryRange(ctx, "vector(time())", end.Add(-30000*time.Second+time.Second), end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || len(ss[0].Points) != 30000 {
		t.Fatalf("range: %d series, %d points", len(ss), len(ss[0].Points))
	}
	for i := 1; i < len(ss[0].Points); i++ {
		if ss[0].Points[i].T-ss[0].Points[i-1].T != 1000 {
			t.Fatalf("gap at %d", i)
		}
	}
	st := c.Stats()
	if st.Queries != 4 || st.WireBytes <= 0 || st.BodyBytes < st.WireBytes || st.Samples != 30000 {
		t.Errorf("stats %+v", st)
	}
	// A bad query is the server's message, not retried.
	_, err = c.Query(ctx, "sum(", time.Now())
	var ae *APIError
	if !errors.As(err, &ae) || ae.ErrorType != "bad_data" || c.Stats().Retries != 0 {
		t.Errorf("bad query: %v (retries %d)", err, c.Stats().Retries)
	}
}

func TestGateway(t *testing.T) {
	u := startPrometheus(t)
	target, _ := url.Parse(u)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var calls, failures atomic.Int64
	gw := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		user, pw, basic := r.BasicAuth()
		if r.Header.Get("Authorization") != "Bearer s3cret" && (!basic || user != "ops" || pw != "pa ss") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if n%3 == 1 { // every third request fails once
			failures.Add(1)
			http.Error(w, "upstream busy", http.StatusServiceUnavailable)
			return
		}
		// Mark the answer partial, as a gateway does when a store is down.
		rec := httptest.NewRecorder()
		r.Header.Del("Accept-Encoding")
		proxy.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err == nil {
			body["warnings"] = []string{"store eu-west-2 did not answer: partial response"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	defer gw.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	var pemBuf bytes.Buffer
	_ = pem.Encode(&pemBuf, &pem.Block{Type: "CERTIFICATE", Bytes: gw.Certificate().Raw})
	tok := filepath.Join(dir, "token")
	pwf := filepath.Join(dir, "pw")
	for f, b := range map[string]string{ca: pemBuf.String(), tok: "s3cret\n", pwf: "pa ss\n"} {
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, o := range []Options{
		{URL: gw.URL, CAFile: ca, BearerTokenFile: tok, Backoff: 10 * time.Millisecond},
		{URL: gw.URL, CAFile: ca, Username: "ops", PasswordFile: pwf, Backoff: 10 * time.Millisecond},
	} {
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if v, err := c.Query(ctx, "vector(1)", time.Now()); err != nil || len(v) != 1 {
				t.Fatalf("through the gateway: %v", err)
			}
		}
		if c.Stats().Retries == 0 {
			t.Errorf("no retry although the gateway failed %d times", failures.Load())
		}
		if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "partial response") {
			t.Errorf("warnings %v", w)
		}
	}
	// Wrong credentials, unknown CA, nothing listening: clear errors.
	bad := filepath.Join(dir, "bad")
	_ = os.WriteFile(bad, []byte("wrong"), 0o600)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{URL: gw.URL, CAFile: ca, BearerTokenFile: bad}, "refused access"},
		{Options{URL: gw.URL, BearerTokenFile: tok, Retries: -1}, "certificate"},
		{Options{URL: "http://127.0.0.1:1", Retries: 1, Backoff: time.Millisecond}, "cannot reach prometheus"},
	} {
		cl, err := New(c.o)
		if err == nil {
			_, err = cl.Query(ctx, "vector(1)", time.Now())
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.o, err, c.want)
		}
	}
	for _, o := range []Options{{URL: "prom:9090"}, {URL: gw.URL, BearerTokenFile: tok, Username: "x"}, {URL: gw.URL, CAFile: tok}} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	// A server that is not Prometheus.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>hello</html>") }))
	defer plain.Close()
	cl, _ := New(Options{URL: plain.URL})
	if _, err := cl.Query(ctx, "vector(1)", time.Now()); err == nil || !strings.Contains(err.Error(), "does not answer like the Prometheus API") {
		t.Errorf("plain server: %v", err)
	}
}

// Label values are asked with GET (Prometheus answers a POST with 405),
// with the form in the query string beside the URL's own parameters, which
// a POST keeps too.
func TestLabelValuesGetKeepsURLParameters(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" tenant="+r.URL.Query().Get("extra_label")+" match="+r.URL.Query().Get("match[]"))
		mu.Unlock()
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		_, _ = io.WriteString(w, `{"status":"success","data":["a:9100","b:9100"]}`)
	}))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL + "/?extra_label=tenant%3D7", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := c.LabelValues(context.Background(), "instance", `{job="node"}`, time.Unix(0, 0), time.Unix(3600, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 2 || vals[0] != "a:9100" {
		t.Errorf("values %q", vals)
	}
	want := `GET /api/v1/label/instance/values tenant=tenant=7 match={job="node"}`
	if len(got) != 1 || got[0] != want {
		t.Errorf("requests %q, want [%q]", got, want)
	}
}
