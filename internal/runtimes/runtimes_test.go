package runtimes

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// value returns one normalised value of a reading.
func value(r *Reading, name string, labels ...string) (float64, bool) {
	for _, m := range r.Values {
		if m.Name != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && m.Labels.Get(labels[i]) == labels[i+1]
		}
		if ok {
			return m.Value, true
		}
	}
	return 0, false
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// A real JDK 17 G1 perf-data file (the GcWorkload test program, churn mode).
func TestParseHsperfJDK17(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/hsperfdata-g1-jdk17")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseHsperf(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Major != 2 || !p.Accessible {
		t.Errorf("version %d.%d accessible %v", p.Major, p.Minor, p.Accessible)
	}
	for name, want := range map[string]int64{
		"sun.os.hrt.frequency":           1000000000,
		"sun.gc.collector.0.invocations": 16,
		"sun.gc.collector.1.invocations": 39,
		"sun.gc.collector.2.invocations": 2,
		"sun.gc.collector.1.time":        1511139024,
	} {
		if got, ok := p.Int(name); !ok || got != want {
			t.Errorf("%s = %d (%v), want %d", name, got, ok, want)
		}
	}
	for name, want := range map[string]string{
		"sun.gc.lastCause":        "System.gc()",
		"sun.gc.policy.name":      "GarbageFirst",
		"sun.gc.collector.1.name": "G1 full collection pauses",
	} {
		if got := p.Str(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	r, err := FromPerfData(p, 368, "java")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{GCSeconds, nil, (432090334.0 + 1511139024 + 1038133) / 1e9},
		{Collections, []string{"generation", "young"}, 16},
		{Collections, []string{"generation", "old"}, 39 + 1}, // full + one concurrent cycle (2 pauses)
		{HeapCommitted, nil, 134217752 + 1195376648},
		{HeapLive, nil, 25165824 + 431258744},
		{HeapLimit, nil, 6320816152},
		{StartTime, nil, 1795307112.320},
		{LastCause, []string{"cause", "System.gc()"}, 1},
	} {
		got, ok := value(r, c.name, c.labels...)
		if !ok || !near(got, c.want) {
			t.Errorf("%s%v = %v (%v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if r.Version != "17.0.15" || r.Target != "pid/368" || r.Runtime != JVM {
		t.Errorf("reading %+v", r)
	}
}

func TestParseHsperfBad(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile("testdata/hsperfdata-g1-jdk17")
	if err != nil {
		t.Fatal(err)
	}
	badMagic := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(badMagic, 0xdeadbeef)
	badOrder := append([]byte(nil), good...)
	badOrder[4] = 7
	for name, b := range map[string][]byte{
		"empty":      nil,
		"short":      good[:20],
		"magic":      badMagic,
		"byte order": badOrder,
		"truncated":  good[:300],
	} {
		if _, err := ParseHsperf(b); err == nil {
			t.Errorf("%s: no error", name)
		} else if name == "magic" && !errors.Is(err, ErrNotHsperf) {
			t.Errorf("%s: %v does not wrap ErrNotHsperf", name, err)
		}
	}
}

func FuzzParseHsperf(f *testing.F) {
	good, err := os.ReadFile("testdata/hsperfdata-g1-jdk17")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:64])
	f.Add(good[:1000])
	f.Fuzz(func(_ *testing.T, b []byte) {
		p, err := ParseHsperf(b)
		if err != nil {
			return
		}
		_, _ = FromPerfData(p, 1, "x")
		_ = PerfEvents(p)
	})
}

func readPage(t *testing.T, name string) *Reading {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "pages", name))
	if err != nil {
		t.Fatal(err)
	}
	fams, err := ParsePage(b)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := Normalize(fams, "http://x/metrics")
	if !ok {
		t.Fatalf("%s: no runtime recognised", name)
	}
	return r
}

type want struct {
	name   string
	labels []string
	v      float64
}

func checkReading(t *testing.T, r *Reading, runtime string, wants []want) {
	t.Helper()
	if r.Runtime != runtime {
		t.Errorf("runtime %q, want %q", r.Runtime, runtime)
	}
	for _, w := range wants {
		got, ok := value(r, w.name, w.labels...)
		if !ok || !near(got, w.v) {
			t.Errorf("%s%v = %v (%v), want %v", w.name, w.labels, got, ok, w.v)
		}
	}
}

// Real pages scraped from the test services (client_golang v1.25,
// prometheus_client 0.16, the JVM program's Micrometer names).
func TestNormalizeRealPages(t *testing.T) {
	t.Parallel()
	checkReading(t, readPage(t, "go-client_golang-1.25.prom"), Go, []want{
		{GCSeconds, nil, 0.001811041},
		{Collections, []string{"generation", "full"}, 11},
		{HeapCommitted, nil, 8.060928e+06 - 3.129344e+06},
		{HeapLive, nil, 4.194304e+06 / 2}, // next_gc / (1 + GOGC/100)
		{Resident, nil, 1.5446016e+07},
	})
	checkReading(t, readPage(t, "python-prometheus_client-0.16.prom"), Python, []want{
		{Collections, []string{"generation", "young"}, 6422 + 583},
		{Collections, []string{"generation", "old"}, 53},
		{CollectedObjects, []string{"generation", "young"}, 555},
		{CollectedObjects, []string{"generation", "old"}, 4.881006e+06},
	})
	checkReading(t, readPage(t, "jvm-micrometer-names.prom"), JVM, []want{
		{Collections, []string{"generation", "young"}, 26},
		{Collections, []string{"generation", "old"}, 9},
		{Induced, []string{"cause", "System.gc()"}, 9},
		{Promoted, nil, 305135616},
		{Allocated, nil, 351272960},
	})
	// A service exporting the runtime's GC CPU time: that over its Ps is
	// its GC time (the pauses, 0.04 s, are a small part of 1.82 s).
	checkReading(t, readPage(t, "go-client_golang-1.25-gc-cpu.prom"), Go, []want{
		{GCSeconds, nil, 1.820633825 / 2},
		{Collections, []string{"generation", "full"}, 741},
	})
	if r := readPage(t, "go-client_golang-1.25.prom"); r.Version != "go1.26.8" {
		t.Errorf("go version %q", r.Version)
	}
}

// The documented names of the runtimes whose clients cannot run here,
// one small page each.
func TestNormalizeDocumentedNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, page, runtime string
		wants               []want
	}{
		{"client_java 0.x", `jvm_gc_collection_seconds_count{gc="G1 Young Generation"} 100
jvm_gc_collection_seconds_sum{gc="G1 Young Generation"} 2.5
jvm_gc_collection_seconds_count{gc="G1 Old Generation"} 4
jvm_gc_collection_seconds_sum{gc="G1 Old Generation"} 1.5
jvm_memory_bytes_used{area="heap"} 1e8
jvm_memory_bytes_committed{area="heap"} 3e8
jvm_memory_bytes_max{area="heap"} 1e9
`, JVM, []want{{GCSeconds, nil, 4}, {Collections, []string{"generation", "young"}, 100}, {Collections, []string{"generation", "old"}, 4},
			{HeapLive, nil, 1e8}, {HeapCommitted, nil, 3e8}, {HeapLimit, nil, 1e9}}},
		{"prometheus-net", `# TYPE dotnet_collection_count_total counter
dotnet_collection_count_total{generation="0"} 1000
dotnet_collection_count_total{generation="1"} 200
dotnet_collection_count_total{generation="2"} 150
dotnet_total_memory_bytes 5e7
process_working_set_bytes 2e8
system_runtime_loh_size 3e7
`, DotNet, []want{{Collections, []string{"generation", "young"}, 1200}, {Collections, []string{"generation", "old"}, 150},
			{HeapLive, nil, 5e7}, {Resident, nil, 2e8}, {LargeObjects, nil, 3e7}}},
		{".NET 9 runtime meter", `dotnet_gc_collections_total{gc_heap_generation="gen0"} 50
dotnet_gc_collections_total{gc_heap_generation="gen2"} 5
dotnet_gc_pause_time_seconds_total 1.25
dotnet_gc_last_collection_heap_size_bytes{gc_heap_generation="gen0"} 1e6
dotnet_gc_last_collection_heap_size_bytes{gc_heap_generation="loh"} 4e6
dotnet_gc_last_collection_memory_committed_size_bytes 2e7
`, DotNet, []want{{GCSeconds, nil, 1.25}, {Collections, []string{"generation", "old"}, 5}, {HeapLive, nil, 5e6},
			{HeapCommitted, nil, 2e7}, {LargeObjects, nil, 4e6}}},
		{"Ruby GC.stat", `ruby_gc_stat_count 60
ruby_gc_stat_minor_gc_count 54
ruby_gc_stat_major_gc_count 6
ruby_gc_stat_time 58
ruby_gc_stat_heap_live_slots 500000
ruby_gc_stat_heap_allocated_pages 1700
ruby_gc_stat_heap_available_slots 695300
ruby_gc_stat_oldmalloc_increase_bytes 68891096
ruby_gc_stat_oldmalloc_increase_bytes_limit 103880088
ruby_gc_stat_malloc_increase_bytes 8232736
ruby_process_resident_memory_bytes 1.274e8
`, Ruby, []want{{GCSeconds, nil, 0.058}, {Collections, []string{"generation", "young"}, 54}, {Collections, []string{"generation", "old"}, 6},
			{HeapLive, nil, 500000 * 40}, {HeapCommitted, nil, 695300 * 40}, {Resident, nil, 1.274e8},
			{GCPending, nil, 68891096}, {GCPendingLimit, nil, 103880088}}},
		{"Ruby GC.stat without available slots", `ruby_gc_stat_major_gc_count 6
ruby_gc_stat_heap_live_slots 500000
ruby_gc_stat_heap_allocated_pages 1700
`, Ruby, []want{{HeapLive, nil, 500000 * 40}, {HeapCommitted, nil, 1700 * 16384}}},
		{"prom-client", `# TYPE nodejs_gc_duration_seconds histogram
nodejs_gc_duration_seconds_bucket{kind="minor",le="+Inf"} 300
nodejs_gc_duration_seconds_sum{kind="minor"} 0.6
nodejs_gc_duration_seconds_count{kind="minor"} 300
nodejs_gc_duration_seconds_bucket{kind="major",le="+Inf"} 12
nodejs_gc_duration_seconds_sum{kind="major"} 0.4
nodejs_gc_duration_seconds_count{kind="major"} 12
nodejs_heap_size_used_bytes 3e7
nodejs_heap_size_total_bytes 6e7
nodejs_version_info{version="v18.19.0",major="18",minor="19",patch="0"} 1
process_resident_memory_bytes 9e7
`, Node, []want{{GCSeconds, nil, 1.0}, {Collections, []string{"generation", "young"}, 300}, {Collections, []string{"generation", "old"}, 12},
			{HeapLive, nil, 3e7}, {HeapCommitted, nil, 6e7}, {Resident, nil, 9e7}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fams, err := ParsePage([]byte(c.page))
			if err != nil {
				t.Fatal(err)
			}
			r, ok := Normalize(fams, "u")
			if !ok {
				t.Fatal("not recognised")
			}
			checkReading(t, r, c.runtime, c.wants)
		})
	}
	fams, err := ParsePage([]byte("node_memory_MemTotal_bytes 1e9\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Normalize(fams, "u"); ok {
		t.Error("a node_exporter page recognised as a runtime")
	}
}

func TestOpenMetricsPage(t *testing.T) {
	t.Parallel()
	page := "# TYPE python_gc_collections counter\n# HELP python_gc_collections x\n# UNIT python_gc_collections collections\n" +
		"python_gc_collections_total{generation=\"0\"} 5\npython_gc_collections_total{generation=\"2\"} 1\n# EOF\n"
	fams, err := ParsePage([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := Normalize(fams, "u")
	if !ok || r.Runtime != Python {
		t.Fatalf("OpenMetrics page not read: %v %+v", ok, r)
	}
}

func TestScrapeErrors(t *testing.T) {
	t.Parallel()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html>hello{</html>\n"))
	}))
	defer garbage.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/metrics"
	ln.Close()
	s := Scraper{Timeout: 300 * time.Millisecond}
	for _, c := range []struct{ url, want string }{
		{notFound.URL + "/metrics", "HTTP 404"},
		{garbage.URL, "not a Prometheus text page"},
		{slow.URL, "no answer within"},
		{closed, "is the service running"},
		{"ftp://x/metrics", "want an http(s) URL"},
	} {
		_, err := s.Fetch(context.Background(), c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.url, err, c.want)
		}
	}
}

// Detection on real processes of each runtime installed here; a runtime
// that is not installed is skipped, naming the package.
func TestDetectLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts interpreters")
	}
	fsys := procfs.NewFS("/")
	self, err := fsys.ProcMaps(os.Getpid())
	if err != nil {
		t.Skip("no /proc:", err)
	}
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	if d, ok := Detect(self, exe); !ok || d.Runtime != Go || !strings.HasPrefix(d.Version, "go") {
		t.Errorf("this Go test binary detected as %+v %v", d, ok)
	}
	for _, c := range []struct {
		runtime, pkg string
		argv         []string
	}{
		{Python, "python3", []string{"/usr/bin/python3", "-c", "import time; print('ready', flush=True); time.sleep(30)"}},
		{Ruby, "ruby", []string{"ruby", "-e", "puts 'ready'; $stdout.flush; sleep 30"}},
		{Node, "nodejs", []string{"node", "-e", "console.log('ready'); setTimeout(() => {}, 30000)"}},
		{JVM, "openjdk-17-jre-headless", []string{"java", "-Xmx32m", "-XX:TieredStopAtLevel=1", "-version"}},
	} {
		t.Run(c.runtime, func(t *testing.T) {
			if _, err := exec.LookPath(c.argv[0]); err != nil {
				t.Skipf("%s missing: apt-get install %s", c.argv[0], c.pkg)
			}
			if c.runtime == JVM {
				c.argv = []string{"jshell", "-R-Xmx32m"} // stays up; read its maps below
				if _, err := exec.LookPath("jshell"); err != nil {
					t.Skip("jshell missing: apt-get install openjdk-17-jdk-headless")
				}
			}
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if c.runtime == JVM {
				w, _ := cmd.StdinPipe()
				defer w.Close()
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			buf := make([]byte, 64)
			if c.runtime != JVM {
				_, _ = stdout.Read(buf) // "ready": the runtime is loaded
			} else {
				time.Sleep(3 * time.Second)
			}
			maps, err := fsys.ProcMaps(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			d, ok := Detect(maps, nil)
			if !ok || d.Runtime != c.runtime {
				t.Fatalf("detected %+v %v, want %s", d, ok, c.runtime)
			}
			if Hint(c.runtime) == "" {
				t.Error("no hint")
			}
		})
	}
}

// A live JVM read through Read with no URL: found in /tmp/hsperfdata_*,
// read without attaching.
func TestReadFindsJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	if _, err := exec.LookPath("jshell"); err != nil {
		t.Skip("jshell missing: apt-get install openjdk-17-jdk-headless")
	}
	cmd := exec.Command("jshell", "-J-Xmx64m")
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	fsys := procfs.NewFS("/")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		res := Read(context.Background(), fsys, Options{})
		for _, rd := range res.Readings {
			if rd.PID == cmd.Process.Pid && rd.Source == "hsperfdata" {
				ms := rd.Metrics()
				var s sample.Snapshot
				for _, m := range ms {
					s.AddMetric(m)
				}
				if v, ok := s.Get(HeapCommitted); !ok || v <= 0 {
					t.Errorf("no committed heap: %+v", ms)
				}
				if v, ok := s.Get(Resident); !ok || v <= 0 {
					t.Errorf("no resident memory: %+v", ms)
				}
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatal("the JVM's hsperfdata was not found")
}

func FuzzNormalize(f *testing.F) {
	for _, n := range []string{"go-client_golang-1.25.prom", "python-prometheus_client-0.16.prom", "jvm-micrometer-names.prom"} {
		b, err := os.ReadFile(filepath.Join("testdata", "pages", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("ruby_gc_stat_count 1\n# EOF\n"))
	f.Add([]byte(nonFinitePage))
	f.Fuzz(func(t *testing.T, b []byte) {
		fams, err := ParsePage(b)
		if err != nil {
			return
		}
		if r, ok := Normalize(fams, "u"); ok {
			for _, m := range r.Metrics() {
				if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
					t.Fatalf("%s = %v", m.Name, m.Value)
				}
			}
		}
	})
}

// nonFinitePage is a scraped page whose GC counters are NaN or infinite.
const nonFinitePage = `# TYPE python_gc_collections_total counter
python_gc_collections_total{generation="0"} +Inf
python_gc_collections_total{generation="1"} 5
python_gc_collections_total{generation="2"} -Inf
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} NaN
python_gc_objects_collected_total{generation="2"} +Inf
# TYPE python_info gauge
python_info{implementation="CPython",major="3",minor="11",patchlevel="2",version="3.11.2"} 1
`

// Infinite values on a scraped page (a broken exporter) are skipped like
// NaN: no series memdoctor keeps is infinite.
func TestNormalizeDropsNonFinite(t *testing.T) {
	fams, err := ParsePage([]byte(nonFinitePage))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := Normalize(fams, "u")
	if !ok {
		t.Fatal("the page was not recognised as python")
	}
	n := 0
	for _, m := range r.Metrics() {
		n++
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			t.Errorf("%s%v = %v", m.Name, m.Labels, m.Value)
		}
	}
	if n == 0 {
		t.Error("no metrics at all")
	}
}

// A JVM adding counters counts an entry and moves the bytes in use before
// it writes the entry: a read at that moment ends on a zeroed entry, and
// parses as what precedes it, not as a corrupt file.
func TestParseHsperfEntryBeingAdded(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile("testdata/hsperfdata-g1-jdk17")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ParseHsperf(good)
	if err != nil {
		t.Fatal(err)
	}
	bo := binary.ByteOrder(binary.BigEndian)
	if good[4] == 1 {
		bo = binary.LittleEndian
	}
	used := bo.Uint32(good[8:])
	if int(used)+2*64 > len(good) {
		t.Fatalf("no room after the %d bytes in use of %d", used, len(good))
	}
	for i := range good[used : used+2*64] {
		if good[int(used)+i] != 0 {
			t.Fatalf("byte %d after the bytes in use is %#x, want 0", i, good[int(used)+i])
		}
	}
	for _, added := range []uint32{1, 2} {
		b := append([]byte(nil), good...)
		bo.PutUint32(b[8:], used+added*64)
		bo.PutUint32(b[28:], bo.Uint32(good[28:])+added)
		got, err := ParseHsperf(b)
		if err != nil {
			t.Fatalf("%d entries being added: %v", added, err)
		}
		if !reflect.DeepEqual(got.Entries, want.Entries) {
			t.Errorf("%d entries being added: %d entries, want the %d before them", added, len(got.Entries), len(want.Entries))
		}
	}
	// A header written in part is still corrupt.
	b := append([]byte(nil), good...)
	bo.PutUint32(b[8:], used+64)
	bo.PutUint32(b[28:], bo.Uint32(good[28:])+1)
	bo.PutUint32(b[used:], 64)
	if _, err := ParseHsperf(b); err == nil {
		t.Error("an entry with only its length written parsed")
	}
}
