package record

import (
	"context"
	"debug/elf"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssFile is this process' resident file-backed memory, in KiB.
func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status (Linux 4.5+)")
	return 0
}

// The executable's read-only pages leave this process (the test binary, a
// real one) and come back as they are used; written data stays as it was.
func TestReleaseExecutablePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux")
	}
	written := strings.Repeat("x", 3) + strconv.Itoa(os.Getpid()) // data of this process, not of the file
	before := rssFile(t)
	n, err := releaseExecutablePages()
	after := rssFile(t)
	if err != nil || n <= 0 {
		t.Fatalf("releaseExecutablePages = %d, %v", n, err)
	}
	t.Logf("released %d MiB of mappings: file-backed RSS %d KiB -> %d KiB", n>>20, before, after)
	pie := true
	if ef, err := elf.Open("/proc/self/exe"); err == nil {
		pie = ef.Type != elf.ET_EXEC
		_ = ef.Close()
	}
	if !pie && after > before/2 {
		t.Errorf("file-backed RSS %d KiB -> %d KiB: not released", before, after)
	}
	// Code and constants are read again from the page cache as needed.
	if got := strings.Repeat("x", 3) + strconv.Itoa(os.Getpid()); got != written {
		t.Errorf("after the release: %q, want %q", got, written)
	}
	if strings.ToUpper("memdoctor") != "MEMDOCTOR" {
		t.Error("code after the release")
	}
}

// In a position-independent executable only code is released: its
// read-only data holds what the loader relocated (RELRO), and dropping it
// would read back the file's unrelocated bytes (this crashed before). The
// test above, built as PIE, must pass.
func TestReleaseExecutablePagesPIE(t *testing.T) {
	if runtime.GOOS != "linux" || testing.Short() {
		t.Skip("needs Linux; builds this package again (-short)")
	}
	if os.Getenv("MEMDOCTOR_PIE_CHILD") != "" {
		t.Skip("already the PIE build")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go toolchain on PATH to build a PIE")
	}
	cmd := exec.Command(gobin, "test", "-buildmode=pie", "-count=1", "-run", "^(TestReleaseExecutablePages|TestSettleAfterSampleAndScrape)$", ".")
	cmd.Env = append(os.Environ(), "MEMDOCTOR_PIE_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("built as PIE: %v\n%s", err, out)
	}
}

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
