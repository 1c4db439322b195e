package store

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/memdoctor/memdoctor/internal/parquettest"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// exportStore holds two instances of a real capture's series over 90
// minutes, at 15 s with millisecond jitter, across chunk boundaries and with
// a head.
func exportStore(t *testing.T) *Store {
	t.Helper()
	st, _ := openTest(t, Options{ChunkRange: 20 * time.Minute})
	for i, inst := range []string{"host-a", "host-b"} {
		sm := newSim(captureSnapshot(t, "healthy-6.18-x86_64-hybrid.txtar"), t0.Add(time.Duration(i)*time.Second), 15*time.Second, uint64(i))
		sm.jitter = 5 * time.Millisecond
		var scs []*sample.Snapshot
		for range 360 {
			sc := sm.next()
			if len(scs) == 0 {
				sc.Add("memdoctor_test_weird", 1, "v", "a \"b\"\n\\c", "instance", "own")
			}
			scs = append(scs, sc)
		}
		if err := st.Append(inst, scs...); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestExportOpenMetricsPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus; make test-deps installs it)")
	}
	st := exportStore(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "export.om")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ExportOpenMetrics(f, Query{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(file)
	for _, want := range []string{
		"# TYPE node_cpu_seconds counter\n", "# TYPE node_memory_MemFree_bytes gauge\n",
		"# TYPE node_vmstat_pgfault unknown\n", `memdoctor_test_weird{exported_instance="own",v="a \"b\"\n\\c",instance="host-a"} 1 `, "# EOF\n",
	} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("export lacks %q", want)
		}
	}
	out := filepath.Join(dir, "blocks")
	if b, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", file, out).CombinedOutput(); err != nil {
		t.Fatalf("promtool create-blocks-from openmetrics: %v\n%s", err, b)
	}
	stats, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got := promtoolSamples(t, promtool, out); got != stats.Samples {
		t.Errorf("promtool blocks hold %d samples, the store %d", got, stats.Samples)
	}
	// Values and millisecond timestamps survive: one series, dumped back.
	want, err := st.Select(Query{Instance: "host-b", Names: []string{"memdoctor_collector_duration_seconds"}, Match: []string{"collector", "meminfo"}})
	if err != nil {
		t.Fatal(err)
	}
	// dump opens the directory as a Prometheus data directory, WAL included.
	if err := os.Mkdir(filepath.Join(out, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	dump, err := exec.Command(promtool, "tsdb", "dump",
		`--match={__name__="memdoctor_collector_duration_seconds",collector="meminfo",instance="host-b"}`, out).Output()
	if err != nil {
		t.Fatalf("promtool tsdb dump: %v", err)
	}
	var got []sample.Point
	sc := bufio.NewScanner(bytes.NewReader(dump))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l[strings.LastIndexByte(l, '}')+1:])
		v, _ := strconv.ParseFloat(f[0], 64)
		ts, _ := strconv.ParseInt(f[1], 10, 64)
		got = append(got, sample.Point{T: ts, V: v})
	}
	if diff := cmp.Diff(got, want[0].Points); diff != "" {
		t.Errorf("series through promtool (-got +want):\n%s", diff)
	}
}

// promtoolSamples sums NUM SAMPLES over the blocks `promtool tsdb list` shows.
func promtoolSamples(t *testing.T, promtool, dir string) int64 {
	t.Helper()
	b, err := exec.Command(promtool, "tsdb", "list", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb list: %v\n%s", err, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if !strings.Contains(lines[0], "DURATION      NUM SAMPLES") {
		t.Fatalf("promtool tsdb list: unknown header %q", lines[0])
	}
	var n int64
	for _, l := range lines[1:] {
		f := strings.Fields(l) // ULID, min, max, duration, samples, chunks, series, size
		v, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			t.Fatalf("promtool tsdb list: %q: %v", l, err)
		}
		n += v
	}
	return n
}

func TestExportOpenMetricsText(t *testing.T) {
	t.Parallel()
	st, _ := openTest(t, Options{})
	for i := range 3 {
		sc := &sample.Snapshot{Time: t0.Add(time.Duration(i)*time.Minute + time.Duration(i)*123*time.Millisecond)}
		sc.Add("node_forks_total", float64(100+i))
		sc.Add("node_memory_MemFree_bytes", 4096*float64(i))
		sc.Add("node_vmstat_pgfault", 7)
		sc.Add("some_total", 1) // a counter by name only
		if err := st.Append("h", sc); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := st.ExportOpenMetrics(&b, Query{From: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	want := `# HELP node_forks Total number of forks.
# TYPE node_forks counter
node_forks_total{instance="h"} 101 1772323260.123
node_forks_total{instance="h"} 102 1772323320.246
# HELP node_memory_MemFree_bytes Memory information field from /proc/meminfo.
# TYPE node_memory_MemFree_bytes gauge
node_memory_MemFree_bytes{instance="h"} 4096 1772323260.123
node_memory_MemFree_bytes{instance="h"} 8192 1772323320.246
# HELP node_vmstat_pgfault /proc/vmstat information field.
# TYPE node_vmstat_pgfault unknown
node_vmstat_pgfault{instance="h"} 7 1772323260.123
node_vmstat_pgfault{instance="h"} 7 1772323320.246
# HELP some memdoctor series some_total.
# TYPE some counter
some_total{instance="h"} 1 1772323260.123
some_total{instance="h"} 1 1772323320.246
# EOF
`
	if diff := cmp.Diff(b.String(), want); diff != "" {
		t.Errorf("export (-got +want):\n%s", diff)
	}
	if !regexp.MustCompile(`(?m)^# EOF\n\z`).Match(b.Bytes()) {
		t.Error("export does not end with # EOF")
	}
	// In 2-minute steps from t0 the first step's last sample is the
	// second one: the same text.
	b.Reset()
	if err := st.ExportOpenMetrics(&b, Query{From: t0, Step: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b.String(), want); diff != "" {
		t.Errorf("stepped export (-got +want):\n%s", diff)
	}
}

// parquetRow is one row of a Parquet export as parquet-go reads it.
type parquetRow struct {
	Instance    string  `parquet:"instance"`
	Name        string  `parquet:"name"`
	Labels      string  `parquet:"labels"`
	TimestampMS int64   `parquet:"timestamp_ms"`
	Value       float64 `parquet:"value"`
}

func TestExportParquet(t *testing.T) {
	t.Parallel()
	st := exportStore(t)
	var b bytes.Buffer
	q := Query{Names: []string{"node_memory_MemFree_bytes", "memdoctor_test_weird", "node_cpu_seconds_total"}}
	if err := st.ExportParquet(&b, q); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range f.Schema().Fields() {
		cols = append(cols, c.Name())
	}
	if diff := cmp.Diff(cols, []string{"instance", "name", "labels", "timestamp_ms", "value"}); diff != "" {
		t.Errorf("Parquet columns (-got +want):\n%s", diff)
	}
	r := parquet.NewGenericReader[parquetRow](bytes.NewReader(b.Bytes()))
	got := make([]parquetRow, r.NumRows())
	if n, err := r.Read(got); n != len(got) {
		t.Fatalf("read %d of %d rows: %v", n, len(got), err)
	}
	var want []parquetRow
	for _, inst := range []string{"host-a", "host-b"} {
		q.Instance = inst
		ss, err := st.Select(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			for _, p := range s.Points {
				want = append(want, parquetRow{inst, s.Name, s.Labels.String(), p.T, p.V})
			}
		}
	}
	key := func(r parquetRow) string {
		return r.Name + r.Labels + r.Instance + strconv.FormatInt(r.TimestampMS, 10)
	}
	if diff := cmp.Diff(got, want, cmp.Transformer("sort", func(rs []parquetRow) map[string]parquetRow {
		m := map[string]parquetRow{}
		for _, r := range rs {
			m[key(r)] = r
		}
		return m
	})); diff != "" || len(got) != len(want) {
		t.Errorf("Parquet rows (%d, want %d) (-got +want):\n%s", len(got), len(want), diff)
	}
	// pyarrow, a second reader of its own, reads the same rows in the same
	// order.
	pa := parquettest.Read(t, b.Bytes())
	if len(pa.Columns) != 5 || len(pa.Columns[0].Strings) != len(got) {
		t.Fatalf("pyarrow reads %d columns, %d rows; parquet-go %d rows", len(pa.Columns), pa.Rows, len(got))
	}
	for i, r := range got {
		c := pa.Columns
		pr := parquetRow{c[0].Strings[i], c[1].Strings[i], c[2].Strings[i], c[3].Ints[i], math.Float64frombits(c[4].Bits[i])}
		if pr != r {
			t.Fatalf("row %d: pyarrow reads %+v, parquet-go %+v", i, pr, r)
		}
	}
	if arrow := pa.Columns[3].Arrow; arrow != "timestamp[ms, tz=UTC]" {
		t.Errorf("pyarrow reads timestamp_ms as %s", arrow)
	}
}

// TestExportParquetEmpty: a range without samples is a file of no rows
// that both readers open.
func TestExportParquetEmpty(t *testing.T) {
	t.Parallel()
	st := exportStore(t)
	var b bytes.Buffer
	if err := st.ExportParquet(&b, Query{Names: []string{"no_such_series"}}); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 0 || len(f.Schema().Fields()) != 5 {
		t.Errorf("parquet-go reads %d rows of %d columns", f.NumRows(), len(f.Schema().Fields()))
	}
	if pa := parquettest.Read(t, b.Bytes()); pa.Rows != 0 || len(pa.Columns) != 5 {
		t.Errorf("pyarrow reads %d rows of %d columns", pa.Rows, len(pa.Columns))
	}
}
