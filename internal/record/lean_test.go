package record

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A lean recorder settles after a sample and after answering /metrics, at
// most once a second (one asked for sooner runs when the second is up);
// one that is not lean (a recorder inside another program) never does.
func TestSettleAfterSampleAndScrape(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux")
	}
	for _, lean := range []bool{false, true} {
		r, err := New(Config{DBPath: filepath.Join(t.TempDir(), "md.db"), Interval: time.Hour, Top: 3, Lean: lean})
		if err != nil {
			t.Fatal(err)
		}
		settled := func() time.Time {
			r.settling.Lock()
			defer r.settling.Unlock()
			return r.settled
		}
		waitChange := func(from time.Time, limit time.Duration) time.Time {
			deadline := time.Now().Add(limit)
			for settled().Equal(from) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			return settled()
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }() // one sample at once, the next in an hour
		limit := 5 * time.Second
		if !lean {
			limit = time.Second
		}
		first := waitChange(time.Time{}, limit)
		if lean == first.IsZero() {
			t.Errorf("lean %v: settled after the first sample at %v", lean, first)
		}
		// A scrape at once: settled when the second is up, not before.
		rec := httptest.NewRecorder()
		r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("/metrics: %d", rec.Code)
		}
		second := waitChange(first, 2*limit/3)
		if lean && (second.Equal(first) || second.Sub(first) < time.Second) {
			t.Errorf("after a scrape %v after the first settle: settled again %v after it", time.Since(first), second.Sub(first))
		}
		if !lean && !second.IsZero() {
			t.Errorf("not lean, but settled at %v", second)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		_ = r.Close()
	}
}
