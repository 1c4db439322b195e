package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// arrivals is a server that notes when each request came and how many
// were being answered at once.
type arrivals struct {
	mu       sync.Mutex
	at       []time.Time
	inFlight atomic.Int64
	most     atomic.Int64
	sleep    time.Duration
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := a.inFlight.Add(1)
	defer a.inFlight.Add(-1)
	for {
		m := a.most.Load()
		if n <= m || a.most.CompareAndSwap(m, n) {
			break
		}
	}
	a.mu.Lock()
	a.at = append(a.at, time.Now())
	a.mu.Unlock()
	time.Sleep(a.sleep)
	_, _ = w.Write([]byte("ok"))
}

func (a *arrivals) times() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := append([]time.Time(nil), a.at...)
	sort.Slice(t, func(i, j int) bool { return t[i].Before(t[j]) })
	return t
}

// TestRunPacesAllWorkersTogether caps a counted run's rate: the rate is
// the total of all workers, so 16 requests at 40/s over 4 workers take
// 15 intervals of 25 ms, whatever the worker count.
func TestRunPacesAllWorkersTogether(t *testing.T) {
	fsys := liveFS(t)
	a := &arrivals{}
	srv := httptest.NewServer(a)
	defer srv.Close()
	res, err := Run(context.Background(), fsys, Options{URL: srv.URL, PID: os.Getpid(), Requests: 16, Concurrency: 4, Rate: 40})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests.Total != 16 || res.Requests.OK != 16 {
		t.Fatalf("requests %+v, want 16 answered", res.Requests)
	}
	at := a.times()[1:] // the first is the preflight
	if len(at) != 16 {
		t.Fatalf("server saw %d measured requests, want 16", len(at))
	}
	// Each request is due 25 ms after the one before; the scheduler may
	// make one late, never early.
	if span := at[15].Sub(at[0]); span < 15*25*time.Millisecond-5*time.Millisecond || span > 2*time.Second {
		t.Errorf("16 requests at 40/s spanned %v, want about 375 ms", span)
	}
	// The i-th request to arrive was due i intervals after the first.
	for i := 1; i < len(at); i++ {
		if since := at[i].Sub(at[0]); since < time.Duration(i)*25*time.Millisecond-10*time.Millisecond {
			t.Errorf("request %d came %v after the first: faster than 40/s", i, since)
		}
	}
}

// TestRunUsesEveryWorker: with no rate, each of the -c workers keeps a
// request open, no more and no fewer; with fewer requests than workers,
// every request is still sent exactly once.
func TestRunUsesEveryWorker(t *testing.T) {
	fsys := liveFS(t)
	a := &arrivals{sleep: 20 * time.Millisecond}
	srv := httptest.NewServer(a)
	defer srv.Close()
	res, err := Run(context.Background(), fsys, Options{URL: srv.URL, PID: os.Getpid(), Requests: 40, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests.OK != 40 {
		t.Errorf("requests %+v, want 40 answered", res.Requests)
	}
	// Go's client may send a GET again when a kept-alive connection
	// breaks under it: then the server sees more requests than were made,
	// and more at once. Otherwise it sees the 4 workers, never more.
	seen := int64(len(a.times()) - 1) // less the preflight
	if m := a.most.Load(); m < 4 || (m > 4 && seen == 40) {
		t.Errorf("at most %d requests at once (server saw %d), want the 4 workers", m, seen)
	}
	for _, lat := range res.LatenciesSeconds {
		if lat < 0.020 {
			t.Errorf("latency %v s below the server's 20 ms", lat)
		}
	}

	b := &arrivals{}
	srv2 := httptest.NewServer(b)
	defer srv2.Close()
	res, err = Run(context.Background(), fsys, Options{URL: srv2.URL, PID: os.Getpid(), Requests: 3, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests.Total != 3 || len(b.times()) != 1+3 {
		t.Errorf("%d recorded, server saw %d, want 3 (and the preflight)", res.Requests.Total, len(b.times()))
	}
}

// TestRunStopsWhenTargetDies: the load stops as soon as the sampled
// process is gone, long before the run's duration, even while waiting
// for its next request (one every 10 s here).
func TestRunStopsWhenTargetDies(t *testing.T) {
	fsys := liveFS(t)
	srv := httptest.NewServer(&arrivals{})
	defer srv.Close()
	target := exec.Command("sleep", "60")
	if err := target.Start(); err != nil {
		t.Skip("no sleep(1):", err)
	}
	waited := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = target.Process.Kill()
		_ = target.Wait() // reaped: its /proc entry goes
		close(waited)
	}()
	start := time.Now()
	_, err := Run(context.Background(), fsys, Options{URL: srv.URL, PID: target.Process.Pid, Duration: 30 * time.Second,
		Rate: 0.1, Concurrency: 2, Interval: 20 * time.Millisecond})
	<-waited
	if !errors.Is(err, ErrTargetGone) {
		t.Errorf("error %v, want the target gone", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the run went on %v after its target died", took)
	}
}

// TestRunStopsOnCancel: a cancelled context ends the run at once, and the
// requests it cuts short are not counted as failures of the server.
func TestRunStopsOnCancel(t *testing.T) {
	fsys := liveFS(t)
	srv := httptest.NewServer(&arrivals{sleep: 50 * time.Millisecond})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, fsys, Options{URL: srv.URL, PID: os.Getpid(), Duration: 30 * time.Second, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run went on %v after its context ended", took)
	}
	if res.Requests.Total == 0 || res.Requests.Errors != 0 || res.Requests.OK != res.Requests.Total {
		t.Errorf("requests %+v: want some, all answered, none cut short counted", res.Requests)
	}
}

// BenchmarkDrive is the load generator's own cost per request against a
// server on loopback that answers at once.
func BenchmarkDrive(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	b.ReportAllocs()
	rec, err := drive(context.Background(), Options{URL: srv.URL, Requests: b.N, Concurrency: 2, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if int(rec.done.Load()) != b.N {
		b.Fatalf("%d of %d requests", rec.done.Load(), b.N)
	}
}

// TestRunTinyRate: a rate far below one a day still paces (the interval
// is capped, not overflowed): the first request goes at once, the next
// waits until the run is cancelled.
func TestRunTinyRate(t *testing.T) {
	fsys := liveFS(t)
	a := &arrivals{}
	srv := httptest.NewServer(a)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, fsys, Options{URL: srv.URL, PID: os.Getpid(), Requests: 3, Concurrency: 3, Rate: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests.Total != 1 || len(a.times()) != 1+1 {
		t.Errorf("%d requests recorded, server saw %d (with the preflight), want 1 and 2", res.Requests.Total, len(a.times()))
	}
}
