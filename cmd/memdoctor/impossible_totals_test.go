package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// usedNumber matches used memory printed as a number (text: "used 12.0
// GiB", "used -1"; HTML: "used 75.0%").
var usedNumber = regexp.MustCompile(`(?i)\bused:? *[-−]?[0-9]`)

// Used memory that would come out below zero or above the total is never
// printed as a number, in diagnose's text and JSON or report's HTML, for
// the whole file or one instance: MemAvailable above MemTotal (used below
// zero), MemTotal missing (used would be minus MemAvailable) and
// MemAvailable negative (used above the total). The JSON leaves used_bytes
// and used_percent out and says why in used_missing; it leaves out as well
// a MemTotal that is missing and a MemAvailable that cannot be.
func TestImpossibleTotalsNeverPrinted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "impossible.om")
	const om = `# TYPE node_memory_MemAvailable_bytes gauge
node_memory_MemAvailable_bytes{instance="above:9100"} 34359738368 1700000000.000
node_memory_MemAvailable_bytes{instance="nototal:9100"} 1000000 1700000000.000
node_memory_MemAvailable_bytes{instance="negative:9100"} -1000000 1700000000.000
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes{instance="above:9100"} 8589934592 1700000000.000
node_memory_MemTotal_bytes{instance="negative:9100"} 8589934592 1700000000.000
# TYPE node_memory_MemFree_bytes gauge
node_memory_MemFree_bytes{instance="above:9100"} 1073741824 1700000000.000
node_memory_MemFree_bytes{instance="nototal:9100"} 1073741824 1700000000.000
node_memory_MemFree_bytes{instance="negative:9100"} 1073741824 1700000000.000
# EOF
`
	if err := os.WriteFile(file, []byte(om), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, inst := range []string{"", "above:9100", "nototal:9100", "negative:9100"} {
		args := []string{"--from", file}
		if inst != "" {
			args = append(args, "--instance", inst)
		}
		text := goldenRun(t, append([]string{"diagnose"}, args...)...)
		if m := usedNumber.FindString(text); m != "" {
			t.Errorf("diagnose %v printed used memory as a number (%q):\n%s", args, m, text)
		}
		js := goldenRun(t, append([]string{"diagnose", "--json"}, args...)...)
		var d struct {
			Accounting map[string]any `json:"accounting"`
		}
		if err := json.Unmarshal([]byte(js), &d); err != nil {
			t.Fatalf("diagnose --json %v: %v", args, err)
		}
		if inst != "" { // the whole file's accounting is its first instance's
			for _, k := range []string{"used_bytes", "used_percent"} {
				if v, ok := d.Accounting[k]; ok {
					t.Errorf("diagnose --json %v: %s = %v, want it absent", args, k, v)
				}
			}
			if s, _ := d.Accounting["used_missing"].(string); s == "" {
				t.Errorf("diagnose --json %v: no used_missing saying why used is not given: %v", args, d.Accounting)
			}
			// Nor a total that is missing, nor an available above it.
			_, hasTotal := d.Accounting["total_bytes"]
			_, hasAvail := d.Accounting["available_bytes"]
			if hasTotal != (inst != "nototal:9100") || hasAvail {
				t.Errorf("diagnose --json %v: total_bytes present %v, available_bytes present %v: %v", args, hasTotal, hasAvail, d.Accounting)
			}
		}
		html := filepath.Join(dir, "report.html")
		goldenRun(t, append([]string{"report", "-o", html}, args...)...)
		b, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		if m := usedNumber.FindString(string(b)); m != "" {
			t.Errorf("report %v printed used memory as a number (%q)", args, m)
		}
	}
}
