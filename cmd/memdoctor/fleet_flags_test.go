package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/usecase/prometheus"
	"github.com/spf13/cobra"
)

// --match (and compare's --a, --b) are parsed as Prometheus reads them
// before anything is sent: `{` was accepted and went into every query.
func TestMatchParsed(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only the query API's requests count: a check running beside
		// the test finds this listener among the host's services and
		// scrapes its /metrics.
		if strings.HasPrefix(r.URL.Path, "/api/") {
			asked.Add(1)
		}
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diagnose", "--prometheus", srv.URL, "--match", "{"}, `--match "{": not a label selector`},
		{[]string{"diagnose", "--prometheus", srv.URL, "--match", `{job="node"`}, "not a label selector"},
		{[]string{"diagnose", "--prometheus", srv.URL, "--match", `{job=~"(("}`}, "not a label selector"},
		{[]string{"diagnose", "--prometheus", srv.URL, "--match", `up{job="node"}`, "--all"}, "without a metric name"},
		{[]string{"report", "--prometheus", srv.URL, "--match", "{", "-o", "-"}, "not a label selector"},
		{[]string{"alerts", "--match", "{"}, `--match "{": not a label selector`},
		{[]string{"compare", "--prometheus", srv.URL, "--a", "{", "--b", `{rack="r2"}`}, `--a "{": not a label selector`},
		{[]string{"compare", "--prometheus", srv.URL, "--a", `{rack="r1"}`, "--b", `rack=`}, `--b "rack=": not a label selector`},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want an error containing %q", c.args, code, errOut, c.want)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the server was asked %d times for bad selectors", n)
	}
	// Good selectors go on, in canonical form.
	out, errOut, code := runCLI(t, "alerts", "--match", ` job = "node" `)
	if code != 0 || !strings.Contains(out, `node_memory_MemAvailable_bytes{job="node"}`) {
		t.Errorf("alerts --match without braces: exit %d, %s\n%s", code, errOut, out)
	}
	_, errOut, code = runCLI(t, "diagnose", "--prometheus", srv.URL, "--match", `{job="node"}`, "--prometheus-retries", "0")
	if code == 0 || !strings.Contains(errOut, "503") || asked.Load() == 0 {
		t.Errorf("a good selector did not reach the server: exit %d, %s", code, errOut)
	}
}

// A server that takes its time on every answer: the scan stops at
// --prometheus-deadline, says so, and says how far it got while it waits
// (before: ~8 minutes against 30 s answers, nothing on stderr). The scan
// asks two queries at a time: two answers a second.
func TestPrometheusDeadline(t *testing.T) {
	old := prometheus.HeartbeatEvery
	prometheus.HeartbeatEvery = 300 * time.Millisecond
	t.Cleanup(func() { prometheus.HeartbeatEvery = old })
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			http.NotFound(w, r) // a check beside the test scraping /metrics
			return
		}
		asked.Add(1)
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a"},"value":[1,"5"]}]}}`)
	}))
	defer srv.Close()

	start := time.Now()
	_, errOut, code := runCLI(t, "diagnose", "--prometheus", srv.URL, "--prometheus-deadline", "2500ms")
	took := time.Since(start)
	if code == 0 || !strings.Contains(errOut, "gave up at --prometheus-deadline 2.5s with 4 answers received") {
		t.Errorf("exit %d, stderr %q; want the deadline named", code, errOut)
	}
	if took > 5*time.Second {
		t.Errorf("took %s with a 2.5 s deadline", took)
	}
	if !strings.Contains(errOut, "memdoctor: scanning the fleet: 2 answers from "+srv.URL) {
		t.Errorf("no progress line on stderr: %q", errOut)
	}
	if n := asked.Load(); n != 6 {
		t.Errorf("%d requests, want 6 (4 answered, the next two cut)", n)
	}

	_, errOut, code = runCLI(t, "diagnose", "--prometheus", srv.URL, "--prometheus-deadline", "-1s")
	if code == 0 || !strings.Contains(errOut, "--prometheus-deadline -1s") {
		t.Errorf("negative deadline: exit %d, %q", code, errOut)
	}

	// Without the flag a fleet scan has 20 minutes (10,000 hosts through
	// Prometheus took 5.5), compare's read of two ranges 5; the progress
	// line names the deadline in force. A server that refuses each query
	// after 700 ms ends each run once a line is out.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(700 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"refused by the test"}`)
	}))
	defer refusing.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diagnose", "--prometheus", refusing.URL}, "(--prometheus-deadline 20m0s)"},
		{[]string{"diagnose", "--prometheus", refusing.URL, "--prometheus-deadline", "7m"}, "(--prometheus-deadline 7m0s)"},
		{[]string{"report", "--prometheus", refusing.URL, "-o", filepath.Join(t.TempDir(), "r.html")}, "(--prometheus-deadline 20m0s)"},
		{[]string{"compare", "--prometheus", refusing.URL, "--a", `{dc="a"}`, "--b", `{dc="b"}`}, "(--prometheus-deadline 5m0s)"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, want %s on stderr: %q", c.args, code, c.want, errOut)
		}
	}
}

// A fleet scan (diagnose and report --prometheus) reads its suspects at
// history.FleetStep by default, 806 s over 14 days; --step overrides it;
// the other Prometheus reads (compare here) keep history.PromStep, 302 s.
func TestFleetDefaultStep(t *testing.T) {
	t.Parallel()
	const until = "2026-11-01T00:00:00Z"
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 806 * time.Second},
		{[]string{"--step", "302s"}, 302 * time.Second},
		{[]string{"--range", "1d"}, time.Minute},
	} {
		var f fleetFlags
		cmd := &cobra.Command{Use: "diagnose"}
		f.register(cmd)
		if err := cmd.Flags().Parse(append([]string{"--prometheus", "http://127.0.0.1:1"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		fl, err := f.fleet(until)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if fl.Window.Step != c.want {
			t.Errorf("diagnose --prometheus %q: step %v, want %v", c.args, fl.Window.Step, c.want)
		}
		if usage := cmd.Flags().Lookup("step").Usage; !strings.Contains(usage, "range / 1500") {
			t.Errorf("diagnose --step's help: %q, want it to say range / 1500", usage)
		}
	}
	var pf promFlags
	cmd := &cobra.Command{Use: "compare"}
	pf.register(cmd, true)
	if err := cmd.Flags().Parse([]string{"--prometheus", "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	win, err := pf.window(until)
	if err != nil || win.Step != 302*time.Second {
		t.Errorf("compare's step %v, %v; want 302s", win.Step, err)
	}
}
