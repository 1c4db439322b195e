package record

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// liveHeap is the heap's live bytes after two full collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLatestHoldsOnlyTheSample: between samples the recorder keeps its
// latest sample for /metrics and /healthz, and nothing else the sample's
// collection read (the processes' mappings, the runtimes' readings): what
// the latest sample keeps live is within twice the sample's own size.
func TestLatestHoldsOnlyTheSample(t *testing.T) {
	requireProc(t)
	r, err := New(Config{DBPath: filepath.Join(t.TempDir(), "md.db"), Interval: 15 * time.Second, Top: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	at := time.Now().Truncate(time.Second)
	for i := range 3 {
		r.Tick(at.Add(time.Duration(i) * 15 * time.Second))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) != 0 {
		t.Fatalf("%d samples still pending after storing", len(r.pending))
	}
	latest := r.latest
	own := snapshotBytes(latest)
	// Its index, built on the first Select, is part of what it holds.
	latest.Select("memdoctor_process_rss_bytes")
	with := liveHeap()
	r.latest = nil
	kept := latest.Time
	latest = nil
	without := liveHeap()
	held := int64(with) - int64(without)
	t.Logf("the latest sample (%v) holds %d bytes live; its own estimate %d", kept, held, own)
	if held > 2*own {
		t.Errorf("the latest sample keeps %d bytes live, more than twice its %d bytes: it holds on to what its collection read", held, own)
	}
}
