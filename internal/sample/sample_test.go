package sample

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

// Looking a metric up in a small snapshot costs memory in proportion to the
// snapshot: diagnosing a fleet of 10 000 one-sample instances kept 17 KB of
// index per instance (170 MB).
func TestSnapshotIndexSmall(t *testing.T) {
	const n = 2000
	snapshots := make([]*Snapshot, n)
	for i := range snapshots {
		snapshots[i] = &Snapshot{}
		snapshots[i].Add("node_memory_MemAvailable_bytes", float64(i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i, s := range snapshots {
		if v, ok := s.Get("node_memory_MemAvailable_bytes"); !ok || v != float64(i) {
			t.Fatalf("Get = %v, %v", v, ok)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Signed: searched in order, a small snapshot allocates nothing, and
	// the heap may have shrunk.
	perSnapshot := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	if perSnapshot > 1024 {
		t.Errorf("the index of a one-metric scrape holds %.0f bytes, want under 1 KiB", perSnapshot)
	}
	runtime.KeepAlive(snapshots)

	// A large snapshot still finds every name.
	big := &Snapshot{}
	for i := range 1000 {
		big.Add(fmt.Sprintf("m%d", i%300), float64(i), "i", fmt.Sprint(i))
	}
	if got := len(big.Select("m7")); got != 4 {
		t.Errorf("Select(m7) found %d metrics, want 4", got)
	}
}

// TestGetAllocatesNothing: the model reads each process' series through
// Get, some thousands of times a check; it finds the first match without
// making a slice of the matches.
func TestGetAllocatesNothing(t *testing.T) {
	var s Snapshot
	for pid := range 100 {
		p := strconv.Itoa(pid)
		s.Add("memdoctor_process_rss_bytes", float64(pid), "pid", p, "comm", "x")
		s.Add("memdoctor_process_rss_bytes", float64(-pid), "pid", p, "comm", "y")
	}
	if v, ok := s.Get("memdoctor_process_rss_bytes", "pid", "42"); !ok || v != 42 {
		t.Fatalf("Get pid 42 = %v, %v; want the first of its two series, 42", v, ok)
	}
	if _, ok := s.Get("memdoctor_process_rss_bytes", "pid", "100"); ok {
		t.Fatal("Get found pid 100, which has no series")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = s.Get("memdoctor_process_rss_bytes", "pid", "42") }); n != 0 {
		t.Errorf("Get allocated %v times a call", n)
	}
}

// A snapshot of up to smallSnapshot metrics, searched in order, finds what
// its index finds: the same metrics in the same order, by name and labels.
func TestSnapshotSmallSearchEqualsIndex(t *testing.T) {
	s := &Snapshot{}
	s.Add("a", 1, "cpu", "0")
	s.Add("b", 2)
	s.Add("a", 3, "cpu", "1")
	s.Add("c", 4, "zone", "normal", "node", "0")
	s.Add("a", 5, "cpu", "0", "mode", "idle")
	s.Add("c", 6, "zone", "dma", "node", "0")
	if !s.small() {
		t.Fatalf("a snapshot of %d metrics is not searched in order", len(s.Metrics))
	}
	type query struct {
		name  string
		match []string
	}
	queries := []query{{"a", nil}, {"a", []string{"cpu", "0"}}, {"a", []string{"cpu", "1"}}, {"a", []string{"mode", "idle"}},
		{"b", nil}, {"c", []string{"node", "0"}}, {"c", []string{"zone", "dma"}}, {"c", []string{"zone", "high"}}, {"d", nil}, {"", nil}}
	answer := func() []string {
		var out []string
		for _, q := range queries {
			v, ok := s.Get(q.name, q.match...)
			var each []Metric
			for m := range s.Each(q.name, q.match...) {
				each = append(each, m)
			}
			sel := s.Select(q.name, q.match...)
			if fmt.Sprint(each) != fmt.Sprint(sel) {
				t.Errorf("%v: Each yields %v, Select returns %v", q, each, sel)
			}
			if q.match == nil && s.Count(q.name) != len(sel) {
				t.Errorf("Count(%q) = %d, Select found %d", q.name, s.Count(q.name), len(sel))
			}
			out = append(out, fmt.Sprint(sel, v, ok, s.Has(q.name)))
		}
		return out
	}
	inOrder := answer()
	for range s.Each("a") {
		break // Each stops when asked to (a yield after false panics)
	}
	s.Names() // builds the index: the lookups use it from here on
	for range s.Each("a") {
		break
	}
	if s.small() {
		t.Fatal("the snapshot is still searched in order after its index was built")
	}
	indexed := answer()
	for i := range queries {
		if inOrder[i] != indexed[i] {
			t.Errorf("%v: searched in order %s, indexed %s", queries[i], inOrder[i], indexed[i])
		}
	}
	if inOrder[0] == inOrder[8] {
		t.Errorf("a present and a missing name answer alike: %s", inOrder[0])
	}
}

// Metrics added after the index was built are found, in order, as in a
// snapshot indexed once with all of them; labels come out sorted by name.
func TestSnapshotAddAfterIndex(t *testing.T) {
	adds := [][]string{{"a", "cpu", "1"}, {"b"}, {"a", "zone", "x", "cpu", "0"}, {"c", "z", "1", "y", "2", "x", "3"}}
	for _, n := range []int{0, 10} { // searched in order, then indexed
		grown, whole := &Snapshot{}, &Snapshot{}
		for i := range n {
			grown.Add("pad", float64(i), "i", fmt.Sprint(i))
			whole.Add("pad", float64(i), "i", fmt.Sprint(i))
		}
		for i, a := range adds {
			_ = grown.Select("a") // may build the index before each add
			grown.Add(a[0], float64(i), a[1:]...)
			whole.Add(a[0], float64(i), a[1:]...)
		}
		for _, name := range []string{"a", "b", "c", "pad", "d"} {
			if g, w := fmt.Sprint(grown.Select(name)), fmt.Sprint(whole.Select(name)); g != w {
				t.Errorf("%d first: Select(%q) = %s after adds, %s indexed once", n, name, g, w)
			}
		}
		if g := fmt.Sprint(grown.Select("c")); g != `[{c {x="3",y="2",z="1"} 3}]` {
			t.Errorf("labels not sorted: %s", g)
		}
	}
}
