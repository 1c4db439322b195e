package store

import (
	"sync"
	"testing"
	"time"
)

// TestConcurrentReader reads through its own connection (a second Store,
// read-only, as `memdoctor diagnose` would while the recorder runs) while
// the writer appends and cuts chunks. Every read must see whole snapshots:
// all series end at the same time, and no read sees less than the one
// before.
func TestConcurrentReader(t *testing.T) {
	t.Parallel()
	base := captureSnapshot(t, "low-available-6.18-x86_64-hybrid.txtar")
	w, path := openTest(t, Options{ChunkRange: 5 * time.Minute})
	sm := newSim(base, t0, 15*time.Second, 9)
	if err := w.Append("h", sm.next()); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const snapshots = 300
	var wg sync.WaitGroup
	wg.Go(func() {
		for range snapshots - 1 {
			if err := w.Append("h", sm.next()); err != nil {
				t.Error(err)
				return
			}
		}
	})
	// Two series of every snapshot, one raw and one through steps.
	names := []string{"node_memory_MemFree_bytes", "node_vmstat_pgfault"}
	reads, prev := 0, 0
	for prev < snapshots {
		raw, err := r.Select(Query{Names: names})
		if err != nil {
			t.Fatal(err)
		}
		stepped, err := r.Select(Query{Names: names[:1], Step: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if len(raw) != 2 || len(stepped) != 1 {
			t.Fatalf("read %d: %d raw series, %d stepped; want 2 and 1", reads, len(raw), len(stepped))
		}
		n := len(raw[0].Points)
		a, _ := raw[0].Last()
		b, _ := raw[1].Last()
		if len(raw[1].Points) != n || a.T != b.T {
			t.Fatalf("read %d: %s has %d samples up to %d, %s %d up to %d: a scrape seen in part",
				reads, raw[0].Name, n, a.T, raw[1].Name, len(raw[1].Points), b.T)
		}
		if n < prev {
			t.Fatalf("read %d saw %d scrapes, an earlier one %d", reads, n, prev)
		}
		prev = n
	}
	wg.Wait()
	t.Logf("%d reads while %d scrapes were appended", reads, snapshots)
}
