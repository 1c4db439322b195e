package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleettest"
	"github.com/memdoctor/memdoctor/internal/store"
)

// writeFleetOM writes an OpenMetrics file of n instances with one sample
// each (a fleet-wide instant query saved as text).
func writeFleetOM(tb testing.TB, n int) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), fmt.Sprintf("fleet%d.om", n))
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := fleettest.WriteInstancesOM(f, n); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkIngestFleet ingests n instances x 1 sample into a store:
// the time per instance must not grow with n.
//
//	go test -run '^$' -bench IngestFleet -benchtime 1x ./internal/source
func BenchmarkIngestFleet(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := writeFleetOM(b, n)
			b.ResetTimer()
			for range b.N {
				stats, d := ingestTimed(b, p)
				if len(stats.Instances) != n {
					b.Fatalf("%d instances, want %d", len(stats.Instances), n)
				}
				b.ReportMetric(float64(d.Microseconds())/float64(n), "µs/instance")
			}
		})
	}
}

// A file of many instances reaches the store in a few transactions of
// about BatchSamples samples, not one per instance (100 000 instances
// were 100 000 transactions and fsyncs).
func TestIngestFleetBatches(t *testing.T) {
	t.Parallel()
	p := writeFleetOM(t, 5000)
	for _, tc := range []struct{ batch, calls int }{{0, 1}, {1000, 5}, {1500, 4}} {
		calls, seen := 0, map[string]bool{}
		stats, err := readInto(p, IngestOptions{BatchSamples: tc.batch}, func(bs []store.Batch) error {
			calls++
			for _, b := range bs {
				if seen[b.Instance] {
					t.Errorf("instance %s written twice", b.Instance)
				}
				seen[b.Instance] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls != tc.calls || len(seen) != 5000 || len(stats.Instances) != 5000 || stats.Samples != 5000 {
			t.Errorf("BatchSamples %d: %d writes of %d instances (stats: %d instances, %d samples), want %d writes of 5000",
				tc.batch, calls, len(seen), len(stats.Instances), stats.Samples, tc.calls)
		}
	}

	// Into a store: every instance, and an error names its instance.
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stats, err := Ingest(p, st, IngestOptions{BatchSamples: 700})
	if err != nil {
		t.Fatal(err)
	}
	insts, err := st.Instances()
	if err != nil || len(insts) != 5000 || len(stats.Instances) != 5000 {
		t.Fatalf("%d instances in the store (%v), stats %d", len(insts), err, len(stats.Instances))
	}
	got, err := st.Latest("host-004321:9100", time.Time{}, 0)
	if err != nil || got.Value("node_memory_MemAvailable_bytes") != 1_000_004_321 {
		t.Errorf("host-004321: %v, %v", got, err)
	}
	_, err = Ingest(p, st, IngestOptions{})
	if err == nil || !strings.Contains(err.Error(), "writing 1 snapshots of host-000000:9100") || !errors.Is(err, store.ErrOutOfOrder) {
		t.Errorf("ingesting the same file again: %v, want out of order, naming the first instance", err)
	}
}

// What an ingested fleet keeps in memory while its store is open: the
// store's head mirror of each instance (~700 bytes), not the writer's
// series caches too (~1200 bytes in all before).
func TestIngestFleetMemory(t *testing.T) {
	const n = 20_000
	p := writeFleetOM(t, n)
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Ingest(p, st, IngestOptions{}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d bytes kept per instance", per)
	if per > 900 {
		t.Errorf("%d bytes kept per ingested instance, want under 900", per)
	}
	runtime.KeepAlive(st)
}
