package source

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/incidenttest"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// selectAll reads every series of an instance back as snapshots.
func selectAll(t *testing.T, st *store.Store, inst string) []*sample.Snapshot {
	t.Helper()
	ss, err := st.Select(store.Query{Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	byT := map[int64]*sample.Snapshot{}
	var ts []int64
	for _, s := range ss {
		for _, p := range s.Points {
			sc := byT[p.T]
			if sc == nil {
				sc = &sample.Snapshot{Time: time.UnixMilli(p.T).UTC()}
				byT[p.T] = sc
				ts = append(ts, p.T)
			}
			sc.AddMetric(sample.Metric{Name: s.Name, Labels: s.Labels, Value: p.V})
		}
	}
	slices.Sort(ts)
	out := make([]*sample.Snapshot, len(ts))
	for i, t := range ts {
		out[i] = byT[t]
	}
	return out
}

// Captures go into the store and come back as they were collected; the
// store's OpenMetrics export reads back the same again.
func TestIngestCapturesIntoStore(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	// The development machine's four captures (one host, "vm"); the lab's
	// are another host.
	dir := t.TempDir()
	for _, n := range captureNames {
		b, err := os.ReadFile(captureFile(n))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, filepath.Base(captureFile(n)), string(b))
	}
	stats, err := Ingest(dir, st, IngestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []*sample.Snapshot
	for _, n := range captureNames {
		want = append(want, collectCapture(t, captureFile(n)))
	}
	if stats.Kind != KindCaptures || stats.Snapshots != 4 || len(stats.Instances) != 1 {
		t.Fatalf("stats %+v", stats)
	}
	got := selectAll(t, st, "vm")
	sameSnapshots(t, "vm", got, want)

	var om bytes.Buffer
	if err := st.ExportOpenMetrics(&om, store.Query{Instance: "vm"}); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, t.TempDir(), "export.om", om.String())
	ms := newMemSink(t)
	if _, err := Read(p, IngestOptions{}, ms.sink); err != nil {
		t.Fatal(err)
	}
	sameSnapshots(t, "vm", ms.snapshots["vm"], want)

	// The same data again is older than what is stored: the store's error,
	// with what was being written.
	_, err = Ingest(dir, st, IngestOptions{})
	if !errors.Is(err, store.ErrOutOfOrder) || !strings.Contains(err.Error(), "vm") {
		t.Errorf("second ingest: %v, want ErrOutOfOrder naming the instance", err)
	}
}

// The generated incident, ingested into a real store, shows its slopes
// through Select.
func TestIngestIncident1IntoStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := incidenttest.WriteIncident1CronDir(dir, incidenttest.Incident1Options{Days: 7, Interval: 20 * time.Minute, Gzip: true}); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	stats, err := Ingest(dir, st, IngestOptions{Instance: "game-17", BatchSamples: 50000})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Snapshots != 7*72 || stats.Samples == 0 {
		t.Fatalf("stats %+v", stats)
	}
	for _, tc := range []struct {
		name  string
		match []string
		want  float64 // per day
	}{
		{"node_memory_SUnreclaim_bytes", nil, 4e9 / 7},
		{"node_cgroups_cgroups", []string{"subsys_name", "memory"}, 10000},
	} {
		ss, err := st.Select(store.Query{Instance: "game-17", Names: []string{tc.name}, Match: tc.match})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 1 || len(ss[0].Points) != 7*72 {
			t.Fatalf("%s: %d series", tc.name, len(ss))
		}
		var ts []time.Time
		var vs []float64
		for _, p := range ss[0].Points {
			ts = append(ts, time.UnixMilli(p.T))
			vs = append(vs, p.V)
		}
		if got := slopePerDay(ts, vs); math.Abs(got-tc.want)/tc.want > 0.05 {
			t.Errorf("%s grows %.4g/day in the store, want ~%.4g", tc.name, got, tc.want)
		}
	}
	from, to, err := st.TimeRange("game-17")
	if err != nil {
		t.Fatal(err)
	}
	if !from.Equal(stats.From) || !to.Equal(stats.To) {
		t.Errorf("store range %s..%s, stats %s..%s", from, to, stats.From, stats.To)
	}
}

func TestOpenStore(t *testing.T) {
	t.Parallel()
	// Anything but a store: a temporary store, removed by cleanup.
	file := captureFile("healthy")
	st, cleanup, stats, err := OpenStore(file)
	if err != nil {
		t.Fatal(err)
	}
	tmp := st.Path()
	if !strings.HasPrefix(tmp, os.TempDir()) || stats.Snapshots != 1 {
		t.Errorf("temporary store %s, stats %+v", tmp, stats)
	}
	if got := selectAll(t, st, "vm"); len(got) != 1 {
		t.Errorf("%d scrapes in the temporary store", len(got))
	}
	cleanup()
	cleanup()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary store left behind: %v", err)
	}

	// A store: opened read-only, as it is.
	path := filepath.Join(t.TempDir(), "rec.db")
	w, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Ingest(captures, w, IngestOptions{Instance: "rec"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if k, err := Detect(path); err != nil || k != KindStore {
		t.Fatalf("Detect(store) = %v, %v", k, err)
	}
	st, cleanup, stats, err = OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if st.Path() != path || stats.Kind != KindStore || len(stats.Instances) != 1 || stats.Instances[0] != "rec" || stats.From.IsZero() {
		t.Errorf("store path %s, stats %+v", st.Path(), stats)
	}
	if err := st.Append("x", &sample.Snapshot{Time: time.Now()}); err == nil {
		t.Error("a store opened by OpenStore is writable")
	}

	// Malformed input: the error, no store, a harmless cleanup.
	bad := writeFile(t, t.TempDir(), "bad.prom", "a 1 1700000000\na{ 2 1700000000\n")
	st, cleanup, _, err = OpenStore(bad)
	if err == nil || st != nil || !strings.Contains(err.Error(), "bad.prom: line 2") {
		t.Errorf("OpenStore(bad) = %v, %v", st, err)
	}
	cleanup()
}

// BenchmarkIngestIncident1 ingests the generated 30-day incident-1
// directory (5-minute interval) into a store and reports samples/s:
//
//	go test -run '^$' -bench IngestIncident1 -benchtime 1x ./internal/source
func BenchmarkIngestIncident1(b *testing.B) {
	dir := b.TempDir()
	start := time.Now()
	if err := incidenttest.WriteIncident1CronDir(dir, incidenttest.Incident1Options{}); err != nil {
		b.Fatal(err)
	}
	b.Logf("generated in %s", time.Since(start))
	b.ResetTimer()
	for range b.N {
		stats, d := ingestTimed(b, dir)
		b.ReportMetric(float64(stats.Samples)/d.Seconds(), "samples/s")
		b.ReportMetric(float64(stats.Samples), "samples")
	}
}

// ingestTimed ingests path into a new store and returns what Ingest said
// and how long it took.
func ingestTimed(b *testing.B, path string) (IngestStats, time.Duration) {
	b.Helper()
	st, err := store.Open(filepath.Join(b.TempDir(), "s.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	stats, err := Ingest(path, st, IngestOptions{})
	if err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	return stats, d
}

// A capture of a host whose name was never set (the kernel lab's guest:
// "(none)") is ingested as localhost, as record and check name it.
func TestIngestUnnamedHostIsLocalhost(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(captures, "healthy-6.1-x86_64-v2.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "healthy-6.1-x86_64-v2.txtar", string(b))
	stats, err := Ingest(dir, st, IngestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Instances) != 1 || stats.Instances[0] != "localhost" {
		t.Errorf("instances %q, want [localhost]", stats.Instances)
	}
}
