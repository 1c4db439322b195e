package main

// Live: a real Prometheus scrapes memdoctor record and Debian's
// prometheus-node-exporter on loopback, and diagnose --prometheus reads
// both back through it.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
)

func TestFleetLive(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes for half a minute")
	}
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	ne, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		t.Skip("prometheus-node-exporter not installed (apt-get install prometheus-node-exporter)")
	}
	t.Parallel() // waits for its own Prometheus to scrape its recorder and exporter
	dir := t.TempDir()
	rec := startRecorder(t, filepath.Join(dir, "md.db"), time.Second)
	neAddr := freeAddr(t)
	nec := exec.Command(ne, "--web.listen-address="+neAddr, "--collector.cgroups", "--collector.vmstat.fields=^(oom_kill|pgpg|pswp|pg.*fault|kswapd.*|allocstall.*|pgscan.*)")
	if err := nec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nec.Process.Kill(); _, _ = nec.Process.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; {
		if r, err := http.Get("http://" + neAddr + "/metrics"); err == nil {
			_ = r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node exporter did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: memdoctor
    static_configs: [{targets: ["%s"], labels: {role: recorder}}]
  - job_name: node
    static_configs: [{targets: ["%s"], labels: {role: exporter}}]
`, rec.addr, neAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startPrometheus(t, dir, cfg)
	// Wait until both targets have been scraped for a while.
	var res fleet.Result
	deadline := time.Now().Add(90 * time.Second)
	for {
		time.Sleep(5 * time.Second)
		out, errOut, code := runBin(t, "diagnose", "--prometheus", srv.url, "--range", "10m", "--all", "--by", "role", "--json")
		if code != 0 {
			if strings.Contains(errOut, "no instance has") && time.Now().Before(deadline) {
				continue // not scraped yet
			}
			t.Fatalf("diagnose exited %d: %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		ok := len(res.Instances) == 2
		for _, in := range res.Instances {
			ok = ok && in.Series >= 5
		}
		if ok || time.Now().After(deadline) {
			break
		}
	}
	if len(res.Instances) != 2 {
		t.Fatalf("%d instances through prometheus, want the recorder and the exporter", len(res.Instances))
	}
	for _, in := range res.Instances {
		if in.Error != "" || in.Series < 5 {
			t.Errorf("%s: error %q, %d series", in.Instance, in.Error, in.Series)
		}
		if in.Labels["release"] == "" || in.Labels["role"] == "" {
			t.Errorf("%s: labels %v (want release from node_uname_info and role)", in.Instance, in.Labels)
		}
		// A few seconds of data: the trend rules say so instead of guessing.
		notes := ""
		for _, n := range in.Notes {
			notes += n.Source + ": " + n.Message + "\n"
		}
		if !strings.Contains(notes, "too little") && !strings.Contains(notes, "too few") && !strings.Contains(notes, "fewer than") {
			t.Errorf("%s: no note about the short history:\n%s", in.Instance, notes)
		}
	}
	if res.Cost.Queries == 0 || res.Cost.WireBytes == 0 {
		t.Errorf("cost %+v", res.Cost)
	}
	// The two scrapes of the same host, compared: one host per group has a
	// difference but no interval, and the recorder's process USS has no
	// counterpart.
	c := compareJSON(t, "--prometheus", srv.url, "--range", "10m", "--a", `{job="node"}`, "--b", `{job="memdoctor"}`)
	av := row(t, c, "available_memory")
	if av.Interval || av.Real || len(av.A) != 1 || len(av.B) != 1 {
		t.Errorf("available memory of one host each: %+v", av)
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "only group B") {
		t.Errorf("notes %v: want process USS in the recorder's group only", c.Notes)
	}
}
