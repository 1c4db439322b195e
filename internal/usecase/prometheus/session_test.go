package prometheus

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowServer answers its first query at once and every later one after
// wait (or never, when the client gives up first).
func slowServer(t *testing.T, wait time.Duration) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			select {
			case <-time.After(wait):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a"},"value":[1,"5"]}]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// lines keeps the heartbeat's lines.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(s string) { l.mu.Lock(); l.all = append(l.all, s); l.mu.Unlock() }
func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

// A session ends its reads at the deadline, says so with the answers it
// got, beats while it waits and not after it ended; a read the caller's
// context ended is not said to be the deadline's, and no deadline is none.
func TestSessionDeadline(t *testing.T) {
	old := HeartbeatEvery
	HeartbeatEvery = 100 * time.Millisecond
	t.Cleanup(func() { HeartbeatEvery = old })
	srv := slowServer(t, 400*time.Millisecond)
	o := PromServer{URL: srv.URL, Timeout: 10 * time.Second, Deadline: time.Second}
	c, err := Connect(o)
	if err != nil {
		t.Fatal(err)
	}
	var got lines
	start := time.Now()
	ctx, end := o.Session(context.Background(), c, got.add, "reading the test")
	for err == nil {
		_, err = c.Query(ctx, "up", time.Now())
	}
	raw := err
	err = end(raw)
	took := time.Since(start)
	want := fmt.Sprintf("reading the test: gave up at --prometheus-deadline 1s with %d answers received", c.Answers())
	if c.Answers() < 2 || !strings.Contains(err.Error(), want) {
		t.Errorf("after %d answers: %v; want %q", c.Answers(), err, want)
	}
	if took < time.Second || took > 3*time.Second {
		t.Errorf("the session took %s with a 1 s deadline", took)
	}
	beats := got.get()
	if len(beats) == 0 || !strings.HasPrefix(beats[0], "memdoctor: reading the test: ") ||
		!strings.Contains(beats[0], " answers from "+c.URL()) || !strings.HasSuffix(beats[0], "(--prometheus-deadline 1s)") {
		t.Errorf("heartbeat lines %q", beats)
	}
	time.Sleep(3 * HeartbeatEvery)
	if after := got.get(); len(after) != len(beats) {
		t.Errorf("%d heartbeat lines after the session ended", len(after)-len(beats))
	}
	if again := end(raw); again.Error() != err.Error() {
		t.Errorf("a second end said %v, the first %v", again, err)
	}

	// The caller's own context ends first (its own deadline): its error,
	// not the session's deadline.
	parent, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ctx, end = o.Session(parent, c, got.add, "reading the test")
	_, err = c.Query(ctx, "up", time.Now())
	if err == nil {
		t.Fatal("a query outlived its cancelled context")
	}
	if err = end(err); strings.Contains(err.Error(), "gave up") {
		t.Errorf("a cancelled read said to be the deadline's: %v", err)
	}

	o.Deadline = 0
	ctx, end = o.Session(context.Background(), c, got.add, "reading the test")
	if _, ok := ctx.Deadline(); ok {
		t.Error("--prometheus-deadline 0 set a deadline")
	}
	if err := end(nil); err != nil {
		t.Errorf("a session without error ended with %v", err)
	}
}
