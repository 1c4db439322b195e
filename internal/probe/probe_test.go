package probe

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

func liveFS(t *testing.T) procfs.FS {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux /proc")
	}
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		t.Skip("needs /proc/PID/smaps_rollup (Linux 4.14+)")
	}
	return procfs.NewFS("/")
}

// TestRunCountsEveryAnswer drives a real HTTP server in this process (the
// sampled target is this test binary) that answers every fifth request 503
// and sleeps 2 ms: the result must count exactly what the server saw.
func TestRunCountsEveryAnswer(t *testing.T) {
	fsys := liveFS(t)
	var served, failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Probe") != "yes" {
			http.Error(w, "missing header", http.StatusBadRequest)
			return
		}
		n := served.Add(1)
		time.Sleep(2 * time.Millisecond)
		if n%5 == 0 {
			failed.Add(1)
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(bytes.Repeat([]byte("x"), 4096))
	}))
	defer srv.Close()

	var last int64
	res, err := Run(context.Background(), fsys, Options{
		URL: srv.URL + "/metrics", PID: os.Getpid(), Requests: 60, Concurrency: 3, Warmup: 5,
		Interval: 20 * time.Millisecond, Headers: []string{"X-Probe: yes"}, Label: "t",
		Progress: func(done, _ int64) { last = done },
	})
	if err != nil {
		t.Fatal(err)
	}
	// The preflight and the warmup are served too, but not measured.
	measured := served.Load() - 1 - 5
	if res.Requests.Total != 60 || int64(res.Requests.Total) != measured {
		t.Errorf("total %d, server measured %d, want 60", res.Requests.Total, measured)
	}
	if got, want := res.Requests.NotOK, res.Requests.Status["503"]; got != want || got == 0 {
		t.Errorf("not ok %d, 503s %d", got, want)
	}
	if res.Requests.OK+res.Requests.NotOK+res.Requests.Errors != res.Requests.Total {
		t.Errorf("counts do not add up: %+v", res.Requests)
	}
	if len(res.LatenciesSeconds) != 60 || res.Latency.Count != 60 {
		t.Errorf("%d latencies, count %d", len(res.LatenciesSeconds), res.Latency.Count)
	}
	l := res.Latency
	if !(l.P50 >= 0.002 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latency percentiles out of order or below the server's 2 ms: %+v", l)
	}
	m := res.Memory
	if m.Samples < 1 || m.Baseline == nil || m.After == nil {
		t.Fatalf("memory: %+v", m)
	}
	if ordered := m.USS.Median > 0 && m.USS.Median <= m.USS.Worst && m.USS.Worst <= m.RSS.Worst && m.PSS.Median <= m.RSS.Median; !ordered {
		t.Errorf("memory out of order (want 0 < USS ≤ PSS ≤ RSS): %+v", m)
	}
	if res.Target.PID != os.Getpid() || res.Target.Comm == "" {
		t.Errorf("target %+v", res.Target)
	}
	if got := res.Settings.HeaderNames; !cmp.Equal(got, []string{"X-Probe"}) {
		t.Errorf("header names %v (values must not be kept)", got)
	}
	if last != 60 {
		t.Errorf("progress reached %d, want 60", last)
	}

	// Saved and loaded, it is the same result.
	path := filepath.Join(t.TempDir(), "r.json")
	if err := Save(path, res); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res, back, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("load(save(r)) differs (-saved +loaded):\n%s", diff)
	}
}

func TestRunRedactsURLCredentials(t *testing.T) {
	fsys := liveFS(t)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1)
	res, err := Run(context.Background(), fsys, Options{URL: u, PID: os.Getpid(), Requests: 3, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "s3cret") {
		t.Errorf("the password is in the result: %s", res.Settings.URL)
	}
}

func TestRunErrors(t *testing.T) {
	fsys := liveFS(t)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()

	// A process that has exited.
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	dead := c.Process.Pid
	_, err := Run(context.Background(), fsys, Options{URL: srv.URL, PID: dead, Requests: 1, Concurrency: 1})
	if !errors.Is(err, ErrTargetGone) || !strings.Contains(err.Error(), "still running") {
		t.Errorf("dead pid: %v", err)
	}

	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/metrics"
	_ = ln.Close()
	_, err = Run(context.Background(), fsys, Options{URL: closed, PID: os.Getpid(), Requests: 1, Concurrency: 1, Timeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "cannot reach") || !strings.Contains(err.Error(), "listening") {
		t.Errorf("refused URL: %v", err)
	}

	for _, o := range []Options{
		{URL: srv.URL, PID: 0, Requests: 1, Concurrency: 1},
		{URL: srv.URL, PID: 1, Requests: 0, Concurrency: 1},
		{URL: srv.URL, PID: 1, Requests: 1, Concurrency: 0},
		{URL: "ftp://x", PID: 1, Requests: 1, Concurrency: 1},
		{URL: srv.URL, PID: 1, Requests: 1, Concurrency: 1, Headers: []string{"no colon"}},
		{URL: srv.URL, PID: 1, Requests: 1, Concurrency: 1, Rate: -1},
	} {
		if _, err := Run(context.Background(), fsys, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestRunDuration bounds a run by time and caps its rate: the count
// follows from rate × duration.
func TestRunDuration(t *testing.T) {
	fsys := liveFS(t)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	res, err := Run(context.Background(), fsys, Options{URL: srv.URL, PID: os.Getpid(), Duration: 1500 * time.Millisecond, Rate: 20, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Requests.Total; n < 20 || n > 40 {
		t.Errorf("%d requests in 1.5 s at 20/s, want about 30", n)
	}
	if res.Settings.Requests != 0 || res.Settings.DurationSeconds != 1.5 {
		t.Errorf("settings %+v", res.Settings)
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	mk := func(label string, uss []int64, lat []float64) *Result {
		r := &Result{Kind: Kind, Version: Version, Label: label, ElapsedSeconds: 2,
			Settings: Settings{URL: "http://127.0.0.1:1/metrics", Concurrency: 1},
			Requests: Requests{Total: len(lat), OK: len(lat)}, LatenciesSeconds: lat}
		r.MemSamples = append(r.MemSamples, MemSample{Phase: PhaseBaseline, USSBytes: 1})
		for _, u := range uss {
			r.MemSamples = append(r.MemSamples, MemSample{Phase: PhaseRun, USSBytes: u, PSSBytes: u + 10, RSSBytes: u + 20})
		}
		r.Summarize()
		return r
	}
	a := mk("before", []int64{90, 70, 130, 80, 100}, []float64{0.098, 0.099, 0.100, 0.125})
	b := mk("after", []int64{17, 18, 17, 16, 17}, []float64{0.132, 0.134, 0.133, 0.234})
	c := Compare(a, b)
	rows := map[string]Row{}
	for _, r := range c.Rows {
		rows[r.Name] = r
	}
	for _, tc := range []struct {
		name string
		a, b float64
	}{
		{"USS median", 90, 17},
		{"USS worst", 130, 18},
		{"RSS worst", 150, 38},
		{"latency max", 0.125, 0.234},
		{"latency p50", 0.0995, 0.1335},
	} {
		r := rows[tc.name]
		if math.Abs(r.A-tc.a) > 1e-9 || math.Abs(r.B-tc.b) > 1e-9 || math.Abs(r.Diff-(tc.b-tc.a)) > 1e-9 || math.Abs(r.Ratio-tc.b/tc.a) > 1e-9 {
			t.Errorf("%s: %+v, want a=%v b=%v", tc.name, r, tc.a, tc.b)
		}
	}
	if len(c.Notes) != 0 {
		t.Errorf("comparable runs got notes: %v", c.Notes)
	}
	b.Settings.Concurrency = 4
	b.Requests.NotOK = 1
	if n := Compare(a, b).Notes; len(n) != 2 {
		t.Errorf("notes %v, want different load and failed requests", n)
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"not json":    "hello",
		"other kind":  `{"kind":"memdoctor-report","version":1}`,
		"newer":       `{"kind":"memdoctor-probe","version":99}`,
		"no version":  `{"kind":"memdoctor-probe"}`,
		"bad latency": `{"kind":"memdoctor-probe","version":1,"latencies_seconds":[-1]}`,
	} {
		if _, err := Decode(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Decode(strings.NewReader(`{"kind":"memdoctor-report","version":1}`)); !errors.Is(err, ErrNotProbe) {
		t.Errorf("other kind: %v, want ErrNotProbe", err)
	}
}

// FuzzDecode: any input either decodes into a result whose summary is
// consistent, or fails; nothing panics.
func FuzzDecode(f *testing.F) {
	f.Add(`{"kind":"memdoctor-probe","version":1,"latencies_seconds":[0.1,0.2],"mem_samples":[{"phase":"run","uss_bytes":5}]}`)
	f.Add(`{"kind":"memdoctor-probe","version":1,"mem_samples":[{"phase":"baseline"},{"phase":"after"}]}`)
	f.Add(`{"kind":"memdoctor-probe","version":1,"requests":{"status":{"200":1}}}`)
	hostile, _ := filepath.Glob("../../testdata/hostile/json/*")
	for _, p := range hostile {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Decode(strings.NewReader(s))
		if err != nil {
			return
		}
		if r.Latency.Count != len(r.LatenciesSeconds) {
			t.Fatalf("count %d of %d latencies", r.Latency.Count, len(r.LatenciesSeconds))
		}
		if c := Compare(r, r); len(c.Rows) == 0 {
			t.Fatal("a result compared with itself has no rows")
		}
	})
}
