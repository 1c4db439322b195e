package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A flag that takes a value, followed by another flag, is a clear error
// naming both, not the parser's strconv message about the second flag;
// values that start with a dash and a digit (-2h) or are "-" still pass.
func TestFlagFollowedByFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"probe", "--pid", "--url", "http://127.0.0.1:1/"}, "--pid needs a value, but is followed by the flag --url"},
		{[]string{"check", "--top", "--json"}, "--top needs a value, but is followed by the flag --json"},
		{[]string{"probe", "-n", "-c", "2", "--pid", "1", "--url", "http://127.0.0.1:1/"}, "-n needs a value, but is followed by the flag -c"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "strconv") {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errOut, c.want)
		}
	}
	// -DURATION is a value, not a flag.
	om := filepath.Join(t.TempDir(), "h.om")
	writeOM(t, om)
	out, errOut, code := runCLI(t, "diagnose", "--from", om, "--since", "-1d")
	if code != 0 || !strings.Contains(out, "FINDINGS") {
		t.Errorf("--since -1d: exit %d %q", code, errOut)
	}
}

// writeOM writes three days of one instance's available memory as
// timestamped OpenMetrics.
func writeOM(t *testing.T, path string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# TYPE node_memory_MemAvailable_bytes gauge\n# TYPE node_memory_MemTotal_bytes gauge\n")
	for d := int64(0); d <= 3; d++ {
		ts := 1700000000 + d*86400
		fmt.Fprintf(&b, "node_memory_MemAvailable_bytes{instance=\"a\"} 4e9 %d\nnode_memory_MemTotal_bytes{instance=\"a\"} 8e9 %d\n", ts, ts)
	}
	b.WriteString("# EOF\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// --since after --until is an inverted range, said so (diagnose, report
// and export), not a range that "holds no data".
func TestInvertedRange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	om := filepath.Join(dir, "h.om")
	writeOM(t, om)
	for _, args := range [][]string{
		{"diagnose", "--from", om},
		{"report", "--from", om, "-o", filepath.Join(dir, "r.html")},
		{"export", "--from", om, "-o", filepath.Join(dir, "x.om")},
	} {
		args = append(args, "--since", "2023-11-16", "--until", "2023-11-15")
		_, errOut, code := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, "inverted range") || !strings.Contains(errOut, "swap them") || strings.Contains(errOut, "holds no data") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	// The same dates in order are a range with data.
	if _, errOut, code := runCLI(t, "diagnose", "--from", om, "--since", "2023-11-15", "--until", "2023-11-16"); code != 0 {
		t.Errorf("ordered range: exit %d, %q", code, errOut)
	}
}

// A probe in which every request fails (all 404) exits non-zero with the
// status counts; one with some successes exits 0.
func TestProbeEveryRequestFailed(t *testing.T) {
	t.Parallel()
	var ok atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok.Load() && r.URL.Path == "/metrics" {
			_, _ = w.Write([]byte("up 1\n"))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	pid := fmt.Sprint(os.Getpid())
	out, errOut, code := runCLI(t, "probe", "--pid", pid, "--url", srv.URL+"/nothing", "-n", "20", "--no-save")
	if code == 0 || !strings.Contains(errOut, "every request failed (20 answered 404 of 20)") {
		t.Errorf("all 404: exit %d, %q", code, errOut)
	}
	if !strings.Contains(out, "404") {
		t.Errorf("the result (with its 404s) is not printed:\n%s", out)
	}
	ok.Store(true)
	if _, errOut, code := runCLI(t, "probe", "--pid", pid, "--url", srv.URL+"/metrics", "-n", "20", "--no-save"); code != 0 {
		t.Errorf("all 200: exit %d, %q", code, errOut)
	}
}

// A URL without a scheme gets a hint with the fixed URL (its password
// redacted), not "(unparsable URL)".
func TestProbeURLWithoutScheme(t *testing.T) {
	t.Parallel()
	pid := fmt.Sprint(os.Getpid())
	for _, c := range []struct{ url, want string }{
		{"127.0.0.1:19610/", "--url 127.0.0.1:19610/ has no scheme: add http:// (--url http://127.0.0.1:19610/)"},
		{"localhost:8080/metrics", "add http:// (--url http://localhost:8080/metrics)"},
		{"u:secret@127.0.0.1:1/", "add http:// (--url http://u:xxxxx@127.0.0.1:1/)"},
	} {
		_, errOut, code := runCLI(t, "probe", "--pid", pid, "--url", c.url, "--no-save")
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "unparsable") || strings.Contains(errOut, "secret") {
			t.Errorf("--url %s: exit %d, %q; want %q", c.url, code, errOut, c.want)
		}
	}
}
