package record

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuf is a log both the recorder and the test use.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func requireProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		t.Skip("no /proc")
	}
}

// TestPendingBoundedInBytes: while the store cannot take samples, those
// held in memory stay within MaxPendingBytes; the oldest are dropped,
// counted on /metrics and /healthz, and logged; once storing works again
// the held samples are stored and the loss is said.
func TestPendingBoundedInBytes(t *testing.T) {
	requireProc(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "md.db")
	var log syncBuf
	r, err := New(Config{DBPath: db, Interval: time.Second, Top: 3, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := time.Now().Truncate(time.Second)
	r.Tick(start)
	one := snapshotBytes(r.latest)
	if one < 1000 {
		t.Fatalf("a host sample estimated at %d bytes", one)
	}
	// The store's file replaced by a directory: reopening fails, as on a
	// disk gone bad, and samples are held in memory.
	if err := os.Rename(db, db+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := r.Reopen(); err == nil {
		t.Fatal("reopening a directory as the store worked")
	}
	r.mu.Lock()
	r.cfg.MaxPendingBytes = 3*one + one/2 // room for 3 samples
	r.mu.Unlock()
	const ticks = 10
	for i := 1; i <= ticks; i++ {
		r.Tick(start.Add(time.Duration(i) * time.Second))
		r.mu.Lock()
		pb, n, lim := r.pendBytes, len(r.pending), r.cfg.MaxPendingBytes
		r.mu.Unlock()
		if pb > lim {
			t.Fatalf("tick %d: %d bytes held, limit %d", i, pb, lim)
		}
		if n == 0 {
			t.Fatalf("tick %d: nothing held while the store is gone", i)
		}
	}
	r.mu.Lock()
	held, drops := len(r.pending), r.pendDrops
	r.mu.Unlock()
	t.Logf("%d samples of about %d KiB each: %d held, %d dropped", ticks, one>>10, held, drops)
	if held+int(drops) != ticks || drops == 0 {
		t.Fatalf("%d held and %d dropped of %d samples", held, drops, ticks)
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if !strings.Contains(rec.Body.String(), "dropped to stay within") {
		t.Errorf("/healthz does not say samples are dropped: %s", rec.Body)
	}
	if !strings.Contains(log.String(), "dropping the oldest") {
		t.Errorf("the drop was not logged:\n%s", log.String())
	}
	// Space back: the held samples are stored, the loss is said.
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(db+".aside", db); err != nil {
		t.Fatal(err)
	}
	if err := r.Reopen(); err != nil {
		t.Fatal(err)
	}
	r.Tick(start.Add((ticks + 1) * time.Second))
	rec = httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if !strings.Contains(body, "memdoctor_record_pending_dropped_total "+strconv.FormatInt(drops, 10)) {
		t.Errorf("/metrics does not count the %d dropped samples:\n%s", drops, grepLines(body, "memdoctor_record_"))
	}
	if !strings.Contains(log.String(), "dropped while it failed") {
		t.Errorf("the loss is not said when storing works again:\n%s", log.String())
	}
	r.mu.Lock()
	stored, pb, drops := r.appends, r.pendBytes, r.pendDrops
	r.mu.Unlock()
	// Every sample taken was stored or counted as dropped.
	if want := 1 + ticks + 1 - drops; stored != want || pb != 0 {
		t.Errorf("%d samples stored (want %d: %d dropped), %d bytes still held", stored, want, drops, pb)
	}
}

// TestDefaultPendingBound: the default bound holds samples of this host for
// a while, and far less than the gigabyte an hour of them took.
func TestDefaultPendingBound(t *testing.T) {
	requireProc(t)
	r, err := New(Config{DBPath: filepath.Join(t.TempDir(), "md.db"), Interval: time.Second, Top: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Tick(time.Now().Truncate(time.Second))
	one := snapshotBytes(r.latest)
	t.Logf("one sample of this host (top 50): about %d KiB; the default bound holds %d", one>>10, DefaultMaxPendingBytes/one)
	if DefaultMaxPendingBytes/one < 10 {
		t.Errorf("the default bound holds only %d samples", DefaultMaxPendingBytes/one)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// TestNextSlot: a slot passed by a few milliseconds (a busy host) is still
// taken; one passed by more than half an interval is skipped, and the next
// slot is always in the future then.
func TestNextSlot(t *testing.T) {
	const iv = time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		prev, now time.Time
		want      time.Time
	}{
		{t0, t0.Add(100 * time.Millisecond), t0.Add(iv)},                                   // on time: wait for the next
		{t0, t0.Add(iv + 20*time.Millisecond), t0.Add(iv)},                                 // 20 ms late: taken at once
		{t0, t0.Add(iv + 600*time.Millisecond), t0.Add(2 * iv)},                            // 600 ms late: skipped
		{t0, t0.Add(5*iv + 700*time.Millisecond), t0.Add(6 * iv)},                          // stalled: the slots passed are skipped
		{t0.Add(1234 * time.Millisecond), t0.Add(1300 * time.Millisecond), t0.Add(2 * iv)}, // after firstSlot's now: back on the grid
	} {
		got := nextSlot(c.prev, c.now, iv)
		if !got.Equal(c.want) {
			t.Errorf("nextSlot(%v, %v) = %v, want %v", c.prev.Sub(t0), c.now.Sub(t0), got.Sub(t0), c.want.Sub(t0))
		}
		if c.now.Sub(got) > iv/2 {
			t.Errorf("nextSlot(%v, %v) = %v: more than half an interval late", c.prev.Sub(t0), c.now.Sub(t0), got.Sub(t0))
		}
	}
}
