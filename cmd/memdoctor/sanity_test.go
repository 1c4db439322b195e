package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeSeriesOM writes an OpenMetrics file of one instance: each series (in
// name order) gets 48 hourly samples from value(i).
func writeSeriesOM(t *testing.T, name string, series map[string]func(i int) string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(series)) {
		value := series[n]
		fmt.Fprintf(&b, "# TYPE %s gauge\n", n)
		for i := range 48 {
			fmt.Fprintf(&b, "%s{instance=\"h\"} %s %d\n", n, value(i), 1700000000+3600*i)
		}
	}
	b.WriteString("# EOF\n")
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func constant(v string) func(int) string { return func(int) string { return v } }

// Finding 6: wrong data is not taken as truth. An OpenMetrics file with
// only MemTotal once gave "[CRITICAL] low_available_memory: only 0 B of 8.00
// GiB available"; MemTotal 0 gave ok; a negative or wrapped total, or
// MemAvailable above MemTotal, printed impossible sizes. Each is now "not
// evaluated" with a note that names the series.
func TestDiagnoseImpossibleSeries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		series map[string]func(int) string
		says   string
	}{
		{"only MemTotal", map[string]func(int) string{"node_memory_MemTotal_bytes": constant("8589934592")},
			"node_memory_MemAvailable_bytes (or, before kernel 3.14, node_memory_MemFree_bytes"},
		{"MemTotal 0", map[string]func(int) string{"node_memory_MemTotal_bytes": constant("0"), "node_memory_MemAvailable_bytes": constant("0")},
			"node_memory_MemTotal_bytes is 0"},
		{"MemTotal negative", map[string]func(int) string{"node_memory_MemTotal_bytes": constant("-5120"), "node_memory_MemAvailable_bytes": constant("0")},
			"node_memory_MemTotal_bytes is negative"},
		{"MemTotal wrapped", map[string]func(int) string{"node_memory_MemTotal_bytes": constant("1.8889465931478581e+22"), "node_memory_MemAvailable_bytes": constant("100")},
			"beyond 8 EiB"},
		{"MemAvailable above MemTotal", map[string]func(int) string{"node_memory_MemTotal_bytes": constant("8589934592"), "node_memory_MemAvailable_bytes": constant("17179869184")},
			"node_memory_MemAvailable_bytes (16.0 GiB) is above node_memory_MemTotal_bytes (8.00 GiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeSeriesOM(t, "host.om", tc.series)
			out, errOut, code := runCLI(t, "diagnose", "--from", file)
			if code != 0 {
				t.Fatalf("diagnose exited %d: %s", code, errOut)
			}
			if strings.Contains(out, "low_available_memory (host)") || strings.Contains(out, "ok:") {
				t.Errorf("judged data it cannot trust:\n%s", out)
			}
			if !strings.Contains(out, "rule low_available_memory: not evaluated") || !strings.Contains(out, tc.says) {
				t.Errorf("no note saying %q:\n%s", tc.says, out)
			}
			if strings.Contains(out, "used -") || strings.Contains(out, "total -") {
				t.Errorf("printed a negative size:\n%s", out)
			}
		})
	}
}

// Finding 6: NaN and +Inf samples in an OpenMetrics file are dropped with a
// note naming the file and the first line; compare --json works (it failed
// with "json: unsupported value: +Inf", naming nothing).
func TestNonFiniteSamplesDropped(t *testing.T) {
	avail := func(bad string) func(int) string {
		return func(i int) string {
			if i == 20 {
				return bad
			}
			return fmt.Sprint(8000000000 - i*1000000)
		}
	}
	a := writeSeriesOM(t, "a.om", map[string]func(int) string{"node_memory_MemTotal_bytes": constant("16000000000"), "node_memory_MemAvailable_bytes": avail("7000000000")})
	for _, bad := range []string{"+Inf", "-Inf", "NaN"} {
		b := writeSeriesOM(t, "b.om", map[string]func(int) string{"node_memory_MemTotal_bytes": constant("16000000000"), "node_memory_MemAvailable_bytes": avail(bad)})
		out, errOut, code := runCLI(t, "compare", a, b, "--json")
		if code != 0 {
			t.Fatalf("compare --json with %s exited %d: %s", bad, code, errOut)
		}
		var r struct {
			Rows []struct {
				ID string             `json:"id"`
				B  map[string]float64 `json:"b"`
			} `json:"rows"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Rows) == 0 {
			t.Fatalf("compare --json with %s: %v\n%s", bad, err, out)
		}
		out, errOut, code = runCLI(t, "diagnose", "--from", b)
		if code != 0 {
			t.Fatalf("diagnose with %s exited %d: %s", bad, code, errOut)
		}
		want := b + ": 1 sample is NaN or infinite, which no memory size or counter can be: dropped (first: line 22, node_memory_MemAvailable_bytes{instance=\"h\"} " + bad + ")"
		if !strings.Contains(out, want) {
			t.Errorf("diagnose with %s: no note %q:\n%s", bad, want, out)
		}
		// compare and export say it too, not only diagnose.
		out, errOut, code = runCLI(t, "compare", a, b)
		if code != 0 || !strings.Contains(out, "note: group B: "+b+": 1 sample is NaN or infinite") {
			t.Errorf("compare with %s: exit %d, no note:\n%s%s", bad, code, out, errOut)
		}
		_, errOut, code = runCLI(t, "export", "--from", b, "-o", filepath.Join(t.TempDir(), "x.om"))
		if code != 0 || !strings.Contains(errOut, "memdoctor: note: "+b+": 1 sample is NaN or infinite") {
			t.Errorf("export with %s: exit %d, no note: %s", bad, code, errOut)
		}
	}
}

// Finding 6: check over a meminfo that cannot be true fails naming the file
// and line (it printed "total -5.00 KiB", "-1.00 KiB" for a wrapped value,
// "used -100.0%", or "ok" for an empty file).
func TestCheckImpossibleMeminfo(t *testing.T) {
	for _, tc := range []struct{ meminfo, says string }{
		{"MemTotal:             -5 kB\nMemFree:               0 kB\n", "proc/meminfo: line 1: malformed: MemTotal is -5 kB"},
		{"MemTotal:  18446744073709551615 kB\n", "proc/meminfo: line 1: malformed: MemTotal is -1 kB"},
		{"MemTotal:        8388608 kB\nMemFree:         1048576 kB\nMemAvailable:   16777216 kB\n", "proc/meminfo: line 3: malformed: MemAvailable 16777216 kB is above MemTotal 8388608 kB"},
		{"MemTotal:              0 kB\n", "proc/meminfo: line 1: malformed: MemTotal is 0"},
		{"\n", "proc/meminfo: malformed: no MemTotal line"},
	} {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "proc", "meminfo"), []byte(tc.meminfo), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, "check", "--root", root)
		if code == 0 || !strings.Contains(errOut, tc.says) {
			t.Errorf("check over %q: exit %d, %q; want an error saying %q\n%s", tc.meminfo, code, errOut, tc.says, out)
		}
	}
}
