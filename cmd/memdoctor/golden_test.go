package main

// Golden outputs: what check, diagnose, report and the fleet scan print
// for fixed inputs (the real captures of testdata/captures, and the fixed
// histories of testdata/golden) is kept in testdata/golden. A change of
// output shows as a failing test; a deliberate one is recorded with
//
//	go test ./cmd/memdoctor -run Golden -update
//
// and reviewed in the diff. The fleet scan reads fleet.om.gz backfilled
// into a real Prometheus; only what differs between runs (its address, the
// scan's cost) is blanked.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// generatedRE matches when a report page was made.
var generatedRE = regexp.MustCompile(`generated \d{4}-\d\d-\d\d \d\d:\d\d UTC`)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// goldenDir holds the fixed inputs and the recorded outputs.
const goldenDir = "../../testdata/golden"

// matchGolden compares got with testdata/golden/name (or writes it with
// -update), keyed per rule: what got says about the set of rules is
// checked against the registry, and each rule's part is compared with its
// section of testdata/golden/rules/<id>.txt (golden_rules_test.go).
func matchGolden(t *testing.T, name, got string) {
	t.Helper()
	k := splitByRule(loadRuleRegistry(), name, got)
	for _, e := range k.errs {
		t.Errorf("%s: %s", name, e)
	}
	matchRuleParts(t, k)
	got = strings.Join(k.body, "\n")
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/memdoctor -run Golden -update records it)", err)
	}
	want := string(b)
	if got == want {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("%s differs at line %d:\n got: %.300s\nwant: %.300s\n(go test ./cmd/memdoctor -run Golden -update after a deliberate change)", path, i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("%s differs in length: %d lines, want %d", path, len(gl), len(wl))
}

func goldenRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// TestGoldenCheck: check on every real capture, as text and as JSON.
func TestGoldenCheck(t *testing.T) {
	caps, err := filepath.Glob("../../testdata/captures/*.txtar")
	if err != nil || len(caps) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, c := range caps {
		name := strings.TrimSuffix(filepath.Base(c), ".txtar")
		t.Run(name, func(t *testing.T) {
			matchGolden(t, "check-"+name+".txt", goldenRun(t, "check", "--capture", c))
			matchGolden(t, "check-"+name+".json", goldenRun(t, "check", "--capture", c, "--json"))
		})
	}
}

// TestGoldenDiagnose: diagnose of the fixed histories, as text and JSON.
func TestGoldenDiagnose(t *testing.T) {
	for _, src := range []string{"fleet", "host"} {
		t.Run(src, func(t *testing.T) {
			from := filepath.Join(goldenDir, src+".om.gz")
			matchGolden(t, "diagnose-"+src+".txt", goldenRun(t, "diagnose", "--from", from))
			matchGolden(t, "diagnose-"+src+".json", goldenRun(t, "diagnose", "--from", from, "--json"))
		})
	}
}

// TestGoldenReport: the HTML report of the fixed histories.
func TestGoldenReport(t *testing.T) {
	for _, src := range []string{"fleet", "host"} {
		t.Run(src, func(t *testing.T) {
			page := goldenRun(t, "report", "--from", filepath.Join(goldenDir, src+".om.gz"), "-o", "-")
			// The time the page was made is the one thing that changes.
			page, n := generatedRE.ReplaceAllString(page, "generated TIME"), len(generatedRE.FindAllString(page, -1))
			if n != 1 {
				t.Fatalf("the page says when it was generated %d times, want once", n)
			}
			matchGolden(t, "report-"+src+".html", page)
		})
	}
}

// TestGoldenAlerts: the alerting rules, plain and with a selector.
func TestGoldenAlerts(t *testing.T) {
	matchGolden(t, "alerts.yml", goldenRun(t, "alerts"))
	matchGolden(t, "alerts-match.yml", goldenRun(t, "alerts", "--match", `{job="node",dc="ams"}`))
}

// goldenFleetEnd is the end of fleet.om.gz (its last sample).
const goldenFleetEnd = "2026-03-10T07:00:00Z"

// TestGoldenFleetScan: the fleet scan of fleet.om.gz backfilled into a real
// Prometheus, as JSON (address and cost blanked) and as text.
func TestGoldenFleetScan(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	backfillGolden(t, filepath.Join(goldenDir, "fleet.om.gz"), dir)
	srv := startPrometheus(t, dir, "")
	args := []string{"diagnose", "--prometheus", srv.url, "--until", goldenFleetEnd, "--range", "14d", "--by", "rack"}

	var res map[string]any
	out := strings.ReplaceAll(goldenRun(t, append(args, "--json")...), srv.url, "PROMETHEUS")
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res["source"] != "PROMETHEUS" {
		t.Fatalf("source %v, want %s", res["source"], srv.url)
	}
	delete(res, "cost")
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	matchGolden(t, "fleet-scan.json", string(b)+"\n")
	matchGolden(t, "fleet-scan.txt", blankScanCost(goldenRun(t, args...), srv.url))
}

// blankScanCost replaces the Prometheus address and the line of the
// scan's cost (time, bytes on the wire) in the text output.
func blankScanCost(out, url string) string {
	out = strings.ReplaceAll(out, url, "PROMETHEUS")
	var b strings.Builder
	for _, l := range strings.SplitAfter(out, "\n") {
		if strings.Contains(l, "aggregated queries") {
			l = "COST\n"
		}
		b.WriteString(l)
	}
	return b.String()
}

// backfillGolden writes a gzipped OpenMetrics file into dir/tsdb with
// promtool, a file per day (promtool reads its whole input once per
// two-hour block).
func backfillGolden(t *testing.T, gz, dir string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	zr := openGzip(t, gz)
	days := map[int64]*bytes.Buffer{}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") {
			continue // untyped samples are all a query needs
		}
		ts, err := strconv.ParseInt(l[strings.LastIndexByte(l, ' ')+1:], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", gz, l, err)
		}
		d := ts / 86400
		if days[d] == nil {
			days[d] = &bytes.Buffer{}
		}
		days[d].WriteString(l + "\n")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var keys []int64
	for d := range days {
		keys = append(keys, d)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var files []string
	for _, d := range keys {
		p := filepath.Join(dir, fmt.Sprintf("day-%d.om", d))
		if err := os.WriteFile(p, append(days[d].Bytes(), "# EOF\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	backfill(t, promtool, filepath.Join(dir, "tsdb"), files)
}

// openGzip opens a gzip file for reading, closed when the test ends.
func openGzip(t *testing.T, path string) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return zr
}
