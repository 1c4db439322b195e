package store

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store/xor"
)

// wchar returns the bytes this process has passed to write(2) so far
// (/proc/self/io): the store's write volume, WAL and checkpoints included.
func wchar(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skipf("write volume: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Skip("write volume: no wchar in /proc/self/io")
	return 0
}

// BenchmarkAppendSnapshot is the recorder's cost per interval: one Append of
// one snapshot of a real capture's 2032 series (synchronous=FULL, so one
// fsync each), and the bytes it writes.
func BenchmarkAppendSnapshot(b *testing.B) {
	st, _ := openTest(b, Options{})
	sm := newSim(captureSnapshot(b, "healthy-6.18-x86_64-hybrid.txtar"), t0, 15*time.Second, 1)
	scs := make([]*sample.Snapshot, 2000)
	for i := range scs {
		scs[i] = sm.next()
	}
	i := 0
	w0 := wchar(b)
	b.ReportAllocs()
	for b.Loop() {
		if i == len(scs) {
			b.StopTimer()
			for j := range scs {
				scs[j] = sm.next()
			}
			i = 0
			b.StartTimer()
		}
		if err := st.Append("h", scs[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(len(scs[0].Metrics)), "series")
	b.ReportMetric(float64(wchar(b)-w0)/float64(b.N), "written-B/op")
}

// BenchmarkIngest is bulk ingest: a day of 5-minute snapshots of 1000 series
// (288 snapshots) per Append.
func BenchmarkIngest(b *testing.B) {
	st, _ := openTest(b, Options{})
	base := captureSnapshot(b, "healthy-6.18-x86_64-hybrid.txtar")
	base.Metrics = base.Metrics[:1000]
	sm := newSim(base, t0, 5*time.Minute, 1)
	day := make([]*sample.Snapshot, 288)
	b.ReportAllocs()
	samples := 0
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		for i := range day {
			day[i] = sm.next()
		}
		b.StartTimer()
		start := time.Now()
		if err := st.Append("h", day...); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		samples += len(day) * 1000
	}
	b.ReportMetric(float64(samples)/took.Seconds(), "samples/s")
}

// BenchmarkSelect30Days reads 30 days at 15 s of 200 series (34.6 M
// samples) in steps of 648 s: 4000 points per series.
func BenchmarkSelect30Days(b *testing.B) {
	st := store30Days(b)
	const n = 30 * 24 * 240
	q := Query{From: t0, To: t0.Add(30 * 24 * time.Hour), Step: 648 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		ss, err := st.Select(q)
		if err != nil {
			b.Fatal(err)
		}
		if len(ss) != 200 || len(ss[0].Points) != 4000 {
			b.Fatalf("got %d series of %d points, want 200 of 4000", len(ss), len(ss[0].Points))
		}
	}
	b.ReportMetric(float64(n*200)/b.Elapsed().Seconds()*float64(b.N), "samples/s")
}

// BenchmarkQuickCheck30Days is what every reader pays at open: the check of
// every page of the store of BenchmarkSelect30Days (and of every chunk).
func BenchmarkQuickCheck30Days(b *testing.B) {
	st := store30Days(b)
	fi, err := os.Stat(st.Path())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := st.QuickCheck(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fi.Size()), "file-B")
}

// store30Days holds 30 days at 15 s of 200 series of a real capture.
func store30Days(b *testing.B) *Store {
	st, _ := openTest(b, Options{})
	base := captureSnapshot(b, "healthy-6.18-x86_64-hybrid.txtar")
	// A new snapshot of the first 200: the capture's own has its name
	// index built over all of its series.
	base = &sample.Snapshot{Time: base.Time, Instance: base.Instance, Metrics: base.Metrics[:200]}
	sm := newSim(base, t0, 15*time.Second, 1)
	const n = 30 * 24 * 240
	batch := make([]*sample.Snapshot, 0, 2400)
	for i := range n {
		batch = append(batch, sm.next())
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.Append("h", batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return st
}

// BenchmarkRecordDay records a day of a real capture's 2032 series at 15 s
// as the recorder does (one Append per snapshot) and reports the file's size
// per sample. "aligned" stamps snapshots exactly every 15 s; "jitter2ms"
// adds the 0-2 ms a ticker-driven time.Now() shows, which costs every
// series 2 bytes of timestamp per sample in XOR chunks. With
// MEMDOCTOR_STORE_BENCH_OUT set, the store and its OpenMetrics export are
// left there (bench/store.sh compares with Prometheus' TSDB).
func BenchmarkRecordDay(b *testing.B) {
	for _, jitter := range []time.Duration{0, 2 * time.Millisecond} {
		name := "aligned"
		if jitter > 0 {
			name = "jitter2ms"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				recordDay(b, name, jitter)
			}
		})
	}
}

func recordDay(b *testing.B, name string, jitter time.Duration) {
	dir := b.TempDir()
	out := os.Getenv("MEMDOCTOR_STORE_BENCH_OUT")
	if out != "" {
		dir = out
	}
	path := filepath.Join(dir, name+".db")
	os.Remove(path)
	st, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	sm := newSim(captureSnapshot(b, "healthy-6.18-x86_64-hybrid.txtar"), t0, 15*time.Second, 1)
	sm.jitter = jitter
	for range 5760 {
		if err := st.Append("h", sm.next()); err != nil {
			b.Fatal(err)
		}
	}
	stats, err := st.Stats()
	if err != nil {
		b.Fatal(err)
	}
	if out != "" {
		f, err := os.Create(filepath.Join(dir, name+".om"))
		if err != nil {
			b.Fatal(err)
		}
		if err := st.ExportOpenMetrics(f, Query{}); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/float64(stats.Samples), "file-B/sample")
	b.ReportMetric(float64(stats.ChunkBytes)/float64(stats.Samples-stats.HeadSamples), "chunk-B/sample")
	b.ReportMetric(float64(stats.Samples), "samples")
	b.ReportMetric(float64(fi.Size()), "file-B")
}

// BenchmarkChunkCRC is the checksum's own cost per chunk (written at a cut
// and checked at every read of it): a 2 h chunk of a noisy series at 15 s,
// 480 samples.
func BenchmarkChunkCRC(b *testing.B) {
	c := xor.New()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 480 {
		c.Append(t0.UnixMilli()+int64(i)*15000, float64(rng.IntN(1<<20))/1000)
	}
	data := c.Bytes()
	b.SetBytes(int64(len(data)))
	var sum int64
	for b.Loop() {
		sum += chunkCRC(7, 1, 2, 480, data)
	}
	_ = sum
}
