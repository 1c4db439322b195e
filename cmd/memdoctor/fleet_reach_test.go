package main

// Every rule reaches a fleet scan: an instance whose only trouble is one
// a rule judges on its latest state (OOM kills, available memory running
// out) is a suspect, fetched and judged, while a healthy one is not.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
)

func TestFleetReachesInstantRules(t *testing.T) {
	skipShort(t)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	end := time.Date(2026, 3, 10, 7, 0, 0, 0, time.UTC)
	const total = 16e9
	type host struct {
		inst       string
		availShare float64
		kills      func(i, n int) float64
	}
	none := func(int, int) float64 { return 0 }
	hosts := []host{
		{"ok:9100", 0.5, none},
		{"oom:9100", 0.5, func(i, n int) float64 { return float64(3 * (i * 2 / n)) }}, // 3 kills half-way
		{"low:9100", 0.04, none},
	}
	var b strings.Builder
	const n = 2 * 24 * 12 // two days every 5 minutes
	for _, name := range []string{"node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes", "node_memory_MemFree_bytes", "node_vmstat_oom_kill", "node_boot_time_seconds"} {
		for _, h := range hosts {
			for i := range n {
				ts := end.Add(-time.Duration(n-1-i) * 5 * time.Minute).Unix()
				v := map[string]float64{"node_memory_MemTotal_bytes": total, "node_memory_MemAvailable_bytes": h.availShare * total,
					"node_memory_MemFree_bytes": h.availShare * total / 2, "node_vmstat_oom_kill": h.kills(i, n),
					"node_boot_time_seconds": float64(end.Add(-30 * 24 * time.Hour).Unix())}[name]
				fmt.Fprintf(&b, "%s{instance=%q,job=\"node\"} %v %d\n", name, h.inst, v, ts)
			}
		}
	}
	b.WriteString("# EOF\n")
	om := filepath.Join(dir, "hosts.om")
	if err := os.WriteFile(om, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", om, filepath.Join(dir, "tsdb")).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	srv := startPrometheus(t, dir, "")
	out := goldenRun(t, "diagnose", "--prometheus", srv.url, "--until", end.Format(time.RFC3339), "--range", "2d", "--json")
	var res fleet.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	got := map[string]*fleet.Instance{}
	for _, in := range res.Instances {
		got[in.Instance] = in
	}
	for _, c := range []struct {
		inst, rule string
	}{{"oom:9100", "oom_kills"}, {"low:9100", "low_available_memory"}} {
		in := got[c.inst]
		if in == nil {
			t.Fatalf("%s not scanned: %s", c.inst, out)
		}
		var ids []string
		for _, f := range in.Findings {
			ids = append(ids, f.ID)
		}
		if !in.Suspect || in.Signals[c.rule] < 1 || !slices.Contains(ids, c.rule) {
			t.Errorf("%s: suspect %v, signals %v, findings %v; want %s to make it a suspect and fire", c.inst, in.Suspect, in.Signals, ids, c.rule)
		}
	}
	if ok := got["ok:9100"]; ok == nil || ok.Suspect || len(ok.Signals) != 0 {
		t.Errorf("the healthy host: %+v", ok)
	}
}
