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

	"golang.org/x/tools/txtar"
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

// cronDir writes a cron job's directory from a real capture's files at
// three times; cgroups replaces its /proc/cgroups when not empty.
func cronDir(t *testing.T, cgroups string) string {
	t.Helper()
	a, err := txtar.ParseFile(capturePath(t, "dying-cgroups-6.18-x86_64-hybrid"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range a.Files {
		kind := map[string]string{"proc/meminfo": "meminfo", "proc/vmstat": "vmstat", "proc/cgroups": "cgroups", "proc/zoneinfo": "zoneinfo",
			"proc/sys/kernel/osrelease": "osrelease"}[f.Name]
		if kind == "" {
			continue
		}
		data := f.Data
		if kind == "cgroups" && cgroups != "" {
			data = []byte(cgroups)
		}
		for _, at := range []string{"10:00", "10:05", "10:10"} {
			if err := os.WriteFile(filepath.Join(dir, kind+"_2026-11-20."+at), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// Cron data has no mountinfo: the memory controller's hierarchy column of
// /proc/cgroups still says v1 or v2, so remedies name that layout's files.
func TestCronDataKnowsCgroupLayout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cgroups, want string }{
		{"", "v1"}, // the capture's own: memory on a v1 hierarchy
		{"#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t0\t80\t1\nmemory\t0\t80\t1\n", "v2"},
	} {
		out, errOut, code := runCLI(t, "diagnose", "--from", cronDir(t, c.cgroups), "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var doc struct {
			Cgroups struct {
				MemoryHierarchy string `json:"memory_hierarchy"`
			} `json:"cgroups"`
		}
		if err := jsonUnmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Cgroups.MemoryHierarchy != c.want {
			t.Errorf("memory hierarchy %q, want %q", doc.Cgroups.MemoryHierarchy, c.want)
		}
	}
}

// diagnose's follow-up commands name the data diagnosed (quoted), never a
// literal SRC; so does the HTML report.
func TestDiagnoseCommandsNameTheSource(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "my data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	om := filepath.Join(dir, "host.om")
	var b strings.Builder
	b.WriteString("# TYPE node_memory_MemAvailable_bytes gauge\n# TYPE node_memory_MemTotal_bytes gauge\n# TYPE node_boot_time_seconds gauge\n")
	const start = 1700000000
	for h := int64(0); h <= 240; h++ { // 10 days, hourly: 1 GB a day less available
		ts := start + h*3600
		fmt.Fprintf(&b, "node_memory_MemAvailable_bytes{instance=\"a\"} %d %d\n", 12_000_000_000-h*41_666_666+(h%3)*10_000_000, ts)
		fmt.Fprintf(&b, "node_memory_MemTotal_bytes{instance=\"a\"} 16000000000 %d\n", ts)
		fmt.Fprintf(&b, "node_boot_time_seconds{instance=\"a\"} %d %d\n", start-30*86400, ts)
	}
	b.WriteString("# EOF\n")
	if err := os.WriteFile(om, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "diagnose", "--from", om)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "available_memory_decline") {
		t.Fatalf("the decline did not fire:\n%s", out)
	}
	if strings.Contains(out, "SRC") || !strings.Contains(out, "memdoctor diagnose --from '"+om+"'") {
		t.Errorf("follow-up commands do not name the data:\n%s", out)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	if _, errOut, code := runCLI(t, "report", "--from", om, "-o", html); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "--from SRC") {
		t.Error("the page shows --from SRC")
	}
}
