package main

// The same synthetic fleet in Prometheus (backfilled with promtool) and in
// VictoriaMetrics (imported over its HTTP API), both Debian's packages
// started by the test on loopback: the fleet scan must reach the same
// verdict on every host through either engine.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/fleettest"
)

// startVictoria runs Debian's victoria-metrics with its data in dir on a
// free loopback port, extra flags after the test's own.
func startVictoria(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	url, _ := startVictoriaStop(t, dir, extra...)
	return url
}

// startVictoriaStop is startVictoria, with what stops it (to start it again
// on the same data with other flags).
func startVictoriaStop(t *testing.T, dir string, extra ...string) (string, func()) {
	t.Helper()
	return fleettest.StartVictoria(t, dir, extra...)
}

// importVictoria sends an OpenMetrics file of the fleet to VictoriaMetrics'
// Prometheus text import, its timestamps (seconds) turned into the
// milliseconds that endpoint reads, in parts of about 8 MB.
func importVictoria(t *testing.T, url, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	post := func(body []byte) {
		resp, err := http.Post(url+"/api/v1/import/prometheus", "text/plain", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("import of %s: %s: %s", file, resp.Status, msg)
		}
	}
	var buf []byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		buf = append(append(buf, line...), "000\n"...)
		if len(buf) > 8<<20 {
			post(buf)
			buf = buf[:0]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(buf) > 0 {
		post(buf)
	}
}

// victoriaFleet imports the fleet of sharedFleet into VictoriaMetrics
// (its data in dir) and starts it and a Prometheus on the fleet's TSDB.
func victoriaFleet(t *testing.T, dir string, vmFlags ...string) (m *fleettest.Manifest, promURL, vmURL string, stopVM func()) {
	t.Helper()
	fleetDir, m, files := sharedFleet(t)
	vmURL, stopVM = startVictoriaStop(t, dir, vmFlags...)
	// VictoriaMetrics takes each file over HTTP (it parses on its own
	// CPUs).
	for _, f := range files {
		importVictoria(t, vmURL, f)
	}
	// What was imported is searchable once flushed.
	resp, err := http.Get(vmURL + "/internal/force_flush")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return m, startPrometheus(t, fleetDir, "").url, vmURL, stopVM
}

// verdicts are each instance's findings as "rule severity" strings, sorted.
func verdicts(res *fleet.Result) map[string][]string {
	out := map[string][]string{}
	for _, in := range res.Instances {
		v := []string{}
		for _, f := range in.Findings {
			v = append(v, fmt.Sprintf("%s %s", f.ID, f.Severity))
		}
		slices.Sort(v)
		out[in.Instance] = v
	}
	return out
}

func TestFleetVictoriaMetricsSameVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a fleet of 60 hosts into VictoriaMetrics beside Prometheus (minutes)")
	}
	dir := t.TempDir()
	m, promURL, vmURL, stopVM := victoriaFleet(t, dir)
	until := m.End.Format(time.RFC3339)
	scan := func(t *testing.T, url string, extra ...string) *fleet.Result {
		t.Helper()
		args := append([]string{"diagnose", "--prometheus", url, "--until", until, "--range", "14d", "--json"}, extra...)
		out, errOut, code := runBin(t, args...)
		if code != 0 {
			t.Fatalf("diagnose --prometheus %s exited %d: %s", url, code, errOut)
		}
		var res fleet.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("%s: %d instances, %d suspects, %d queries, %d bytes on the wire, %.1f s; warnings %q",
			url, len(res.Instances), res.Suspects, res.Cost.Queries, res.Cost.WireBytes, res.Cost.DurationSeconds, res.Warnings)
		return &res
	}
	same := func(t *testing.T, p, v *fleet.Result) {
		t.Helper()
		if len(p.Instances) != len(m.Hosts) || len(v.Instances) != len(m.Hosts) {
			t.Fatalf("instances: Prometheus %d, VictoriaMetrics %d, the fleet %d", len(p.Instances), len(v.Instances), len(m.Hosts))
		}
		pv, vv := verdicts(p), verdicts(v)
		differ := 0
		for _, h := range m.Hosts {
			if !slices.Equal(pv[h.Instance], vv[h.Instance]) {
				differ++
				t.Errorf("%s: Prometheus %v, VictoriaMetrics %v", h.Instance, pv[h.Instance], vv[h.Instance])
			}
		}
		got := fired(v)
		for _, rule := range fleettest.JudgedRules {
			if msg := m.Check(rule, got[rule]); msg != "" {
				t.Errorf("VictoriaMetrics: %s (injected on %v)", msg, m.Expecting(rule))
			}
		}
		t.Logf("%d of %d hosts judged differently", differ, len(m.Hosts))
	}
	var pDefault *fleet.Result
	for _, mode := range [][]string{nil, {"--all"}} {
		t.Run(strings.Join(append([]string{"scan"}, mode...), " "), func(t *testing.T) {
			p := scan(t, promURL, mode...)
			if mode == nil {
				pDefault = p
			}
			same(t, p, scan(t, vmURL, mode...))
		})
	}
	// VictoriaMetrics refuses a range query of more points a series than
	// -search.maxPointsPerTimeseries (30,000 by default; a 14-day scan
	// every 10 minutes asks 2,017): at 1,000 the suspects' ranges are
	// asked again in halves of the range, and the verdicts stay the same.
	t.Run("engine limits split the query", func(t *testing.T) {
		if pDefault == nil {
			t.Skip("the scan failed")
		}
		stopVM()
		url, stop := startVictoriaStop(t, dir, "-search.maxPointsPerTimeseries=1000")
		defer stop()
		v := scan(t, url)
		if v.Cost.Splits == 0 {
			t.Errorf("no query was split, yet every range asked has more than 1,000 points a series")
		}
		same(t, pDefault, v)
	})
	// At most 24 series a query (-search.maxUniqueTimeseries), two fifths
	// of the 60 hosts: every aggregate over them is refused, and so are
	// its halves (30 hosts), as is a fetch of eight hosts' nine series and
	// of four. At most 8 KiB a query (-search.maxQueryLen, half the
	// default): a part named by 30 instances (10.9 KB) is refused for its
	// length, one of 15 (6.2 KB) is not. The scan lists the instances and
	// asks each refused query again for halves of them (each again while
	// refused); the verdicts stay the same, and the answers, complete,
	// carry no warning of a partial one.
	const seriesLimit = 24
	t.Run("a limit on series splits the scan by instance", func(t *testing.T) {
		if pDefault == nil {
			t.Skip("the scan failed")
		}
		stopVM()
		url := startVictoria(t, dir, fmt.Sprintf("-search.maxUniqueTimeseries=%d", seriesLimit), "-search.maxQueryLen=8192")
		v := scan(t, url)
		if v.Cost.Splits < int64(len(v.Instances))/seriesLimit {
			t.Errorf("%d queries split, yet no query of more than %d hosts' series passes", v.Cost.Splits, seriesLimit)
		}
		if len(v.Warnings) > 0 {
			t.Errorf("warnings on complete answers: %q", v.Warnings)
		}
		same(t, pDefault, v)
		t.Logf("%d queries, %d of them split", v.Cost.Queries, v.Cost.Splits)
	})
}
