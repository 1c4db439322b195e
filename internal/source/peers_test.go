package source

// Real peers: Debian's prometheus-node-exporter and promtool.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func startNodeExporter(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		t.Skip("prometheus-node-exporter not installed (apt-get install prometheus-node-exporter)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--web.listen-address="+addr, "--collector.disable-defaults",
		"--collector.meminfo", "--collector.vmstat", "--collector.zoneinfo", "--collector.slabinfo",
		"--collector.cgroups", "--collector.pressure", "--collector.stat", "--collector.cpu",
		"--collector.uname", "--collector.loadavg")
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr + "/metrics"
	for range 100 {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return url
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("node_exporter did not start on %s", addr)
	return ""
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flatValues parses a scrape with prometheus/common's own parser into
// series key -> value (gauges, counters, untyped; summaries and histograms
// as their _sum and _count).
func flatValues(t *testing.T, text []byte) map[string]float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			var nv []string
			for _, l := range m.Label {
				nv = append(nv, l.GetName(), l.GetValue())
			}
			key := func(n string) string { return sample.Metric{Name: n, Labels: sample.L(nv...)}.Key() }
			switch {
			case m.Gauge != nil:
				out[key(name)] = m.Gauge.GetValue()
			case m.Counter != nil:
				out[key(name)] = m.Counter.GetValue()
			case m.Untyped != nil:
				out[key(name)] = m.Untyped.GetValue()
			case m.Summary != nil:
				out[key(name+"_sum")] = m.Summary.GetSampleSum()
				out[key(name+"_count")] = float64(m.Summary.GetSampleCount())
			case m.Histogram != nil:
				out[key(name+"_sum")] = m.Histogram.GetSampleSum()
				out[key(name+"_count")] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

// Three real node_exporter snapshots, stamped and concatenated into one
// OpenMetrics file, read back value for value.
func TestNodeExporterDump(t *testing.T) {
	t.Parallel()
	url := startNodeExporter(t)
	var file bytes.Buffer
	var want []map[string]float64
	var times []time.Time
	lines := 0
	for i := range 3 {
		if i > 0 {
			time.Sleep(time.Second)
		}
		text := get(t, url)
		at := time.Now().Truncate(time.Millisecond)
		times = append(times, at)
		want = append(want, flatValues(t, text))
		stamp := " " + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
		sc := bufio.NewScanner(bytes.NewReader(text))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if l == "" || strings.HasPrefix(l, "#") {
				file.WriteString(l + "\n")
				continue
			}
			lines++
			file.WriteString(l + stamp + "\n")
		}
	}
	file.WriteString("# EOF\n")
	p := writeFile(t, t.TempDir(), "node-1.om", file.String())
	if k, err := Detect(p); err != nil || k != KindOpenMetrics {
		t.Fatalf("Detect = %v, %v", k, err)
	}
	ms := newMemSink(t)
	st, err := Read(p, IngestOptions{}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Samples, int64(lines); got != want {
		t.Errorf("%d samples, want the %d sample lines", got, want)
	}
	got := ms.snapshots["node-1"]
	if len(got) != 3 {
		t.Fatalf("%d scrapes of node-1 (instances %v), want 3", len(got), st.Instances)
	}
	for i, s := range got {
		if !s.Time.Equal(times[i]) {
			t.Errorf("scrape %d at %s, want %s", i, s.Time, times[i])
		}
		have := byKey(s)
		bad := 0
		for k, v := range want[i] {
			if hv, ok := have[k]; !ok || hv != v {
				if bad++; bad <= 5 {
					t.Errorf("scrape %d: %s = %v (present %v), want %v", i, k, hv, ok, v)
				}
			}
		}
		if s.Value("node_memory_MemTotal_bytes") <= 0 || len(s.Select("node_cpu_seconds_total")) == 0 {
			t.Errorf("scrape %d lacks MemTotal or CPU seconds", i)
		}
	}
}

// Real collections written as OpenMetrics go through promtool (backfilled
// into TSDB blocks, then dumped) and promtool's dump reads back equal.
func TestPromtoolRoundTrip(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	reals := realSnapshots(t)
	in := map[string][]*sample.Snapshot{"vm:9100": reals}
	var om bytes.Buffer
	writeOpenMetrics(&om, in, true)
	omPath := writeFile(t, dir, "in.om", om.String())
	// Our own reader first: the file promtool gets is right.
	ms := newMemSink(t)
	if _, err := Read(omPath, IngestOptions{}, ms.sink); err != nil {
		t.Fatal(err)
	}
	sameSnapshots(t, "vm:9100", ms.snapshots["vm:9100"], reals)

	blocks := filepath.Join(dir, "tsdb")
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", omPath, blocks).CombinedOutput(); err != nil {
		t.Fatalf("promtool create-blocks-from openmetrics: %v\n%s", err, out)
	}
	// promtool 2.42's dump opens the directory as a TSDB, WAL included.
	if err := os.MkdirAll(filepath.Join(blocks, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	dump, err := exec.Command(promtool, "tsdb", "dump", blocks).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("promtool tsdb dump: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("promtool tsdb dump: %v", err)
	}
	dumpPath := writeFile(t, dir, "dump.txt", string(dump))
	ms = newMemSink(t)
	st, err := Read(dumpPath, IngestOptions{}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Instances) != 1 || st.Instances[0] != "vm:9100" {
		t.Errorf("instances %v, want [vm:9100]", st.Instances)
	}
	sameSnapshots(t, "vm:9100", ms.snapshots["vm:9100"], reals)
}
