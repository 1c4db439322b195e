package collect_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// With no JVM's perf data to poll, check's wait between its two readings
// of the runtimes (here a Go service's /metrics on loopback, scraped
// twice) wakes only to draw its bar, every 100 ms, not every 5 ms: the
// idle wake-ups cost a third of check's CPU time.
func TestReadRuntimesAgainIdleWait(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 1 s")
	}
	var gcs atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := gcs.Add(1)
		fmt.Fprintf(w, "# TYPE go_gc_duration_seconds summary\ngo_gc_duration_seconds_sum %d\ngo_gc_duration_seconds_count %d\n"+
			"# TYPE go_memstats_heap_alloc_bytes gauge\ngo_memstats_heap_alloc_bytes 1.048576e+07\n"+
			"# TYPE go_info gauge\ngo_info{version=\"go1.26.0\"} 1\n", n, 10*n)
	}))
	defer srv.Close()
	const interval = time.Second
	// Focused on this test's process: a JVM another test runs meanwhile
	// (go test runs packages side by side) has perf data the wait polls
	// every 5 ms, as it should, and failed this test with 170 wake-ups.
	opt := collect.Options{TopProcesses: 1, Live: true, Runtimes: true, Scrape: []string{srv.URL + "/metrics"}, GCInterval: interval,
		Focus: collect.ProcessFocus{PIDs: []int{os.Getpid()}}}
	fsys := procfs.NewFS("/")
	res, err := collect.Collect(fsys, opt)
	if err != nil {
		t.Fatal(err)
	}
	updates := 0
	bars := func(string) (func(done, total int64), func()) {
		return func(int64, int64) { updates++ }, func() {}
	}
	start := time.Now()
	if earlier := collect.ReadRuntimesAgain(context.Background(), fsys, opt, res, bars); earlier == nil {
		t.Fatalf("no second reading of a scraped Go runtime: %+v", res.Notes)
	}
	took := time.Since(start)
	t.Logf("%d wake-ups in %v", updates, took)
	if took < interval {
		t.Errorf("the second reading came after %v, before the interval of %v", took, interval)
	}
	if most := int(took/(100*time.Millisecond)) + 2; updates > most {
		t.Errorf("%d wake-ups in %v with nothing to poll: want at most %d (one per 100 ms for the bar)", updates, took, most)
	}
}
