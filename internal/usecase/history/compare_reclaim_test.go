package history_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
)

// reclaimRecording writes a 1 s recording of n samples whose reclaim
// counters rise by the given amounts each second (cycled), at one
// watermark_scale_factor.
func reclaimRecording(t *testing.T, wsf float64, n int, hits, stalls, scans []float64) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "r.db")
	st, err := store.Open(db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var h, s, p float64
	for i := range n {
		sc := &sample.Snapshot{Time: t0.Add(time.Duration(i) * time.Second)}
		sc.Add("node_vmstat_kswapd_low_wmark_hit_quickly", 1000+h)
		sc.Add("node_vmstat_allocstall_normal", 50+s)
		sc.Add("node_vmstat_allocstall_movable", 7)
		sc.Add("node_vmstat_pgscan_direct", 9000+p)
		sc.Add("node_sysctl_vm_watermark_scale_factor", wsf)
		sc.Add("node_memory_MemAvailable_bytes", 5e8)
		sc.Add("node_boot_time_seconds", float64(t0.Add(-time.Hour).Unix()))
		if err := st.Append("lab", sc); err != nil {
			t.Fatal(err)
		}
		h, s, p = h+hits[i%len(hits)], s+stalls[i%len(stalls)], p+scans[i%len(scans)]
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// Two short recordings of one host, the second with fewer quick wake-ups,
// stalls and direct scans: compare reports each counter per day over
// parts of each recording, the drop with an interval that excludes 0,
// and each recording's counts with their span (too short for daily rates).
// The same recording on both sides shows no difference.
func TestCompareReclaimRecordings(t *testing.T) {
	ha, sa, pa := []float64{7, 9, 8, 6}, []float64{1, 3, 2}, []float64{300, 500}
	hb, sb, pb := []float64{3, 2, 4}, []float64{0, 1, 0}, []float64{40, 80}
	a := reclaimRecording(t, 10, 31, ha, sa, pa)
	b := reclaimRecording(t, 200, 31, hb, sb, pb)
	res, err := history.CompareSources(a, "", b, "", noBars)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, r := range res.Rows {
		switch r.ID {
		case "kswapd_low_wmark_hit_quickly", "allocstall", "pgscan_direct":
			rows[r.ID] = true
			if r.Of != "part" || len(r.A) < 5 || len(r.B) < 5 || !r.Interval || !r.Real || r.Diff >= 0 || r.Hi >= 0 {
				t.Errorf("%s: %+v", r.ID, r)
			}
			if !strings.Contains(r.Verdict, "B is lower") {
				t.Errorf("%s verdict %q", r.ID, r.Verdict)
			}
		}
	}
	if len(rows) != 3 {
		t.Fatalf("reclaim rows %v in %+v", rows, res.Rows)
	}
	// The counts over the 30 s the 31 samples span.
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{
		fmt.Sprintf("group A, lab: %s, %s, %s directly in 30s: too short",
			format.Count(rises(ha, 30), "quick kswapd wake-up", "quick kswapd wake-ups"),
			format.Count(rises(sa, 30), "direct-reclaim stall", "direct-reclaim stalls"),
			format.Count(rises(pa, 30), "page scanned", "pages scanned")),
		fmt.Sprintf("group B, lab: %s, %s, %s directly in 30s: too short",
			format.Count(rises(hb, 30), "quick kswapd wake-up", "quick kswapd wake-ups"),
			format.Count(rises(sb, 30), "direct-reclaim stall", "direct-reclaim stalls"),
			format.Count(rises(pb, 30), "page scanned", "pages scanned"))} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	same, err := history.CompareSources(a, "", a, "", noBars)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range same.Rows {
		if r.ID == "kswapd_low_wmark_hit_quickly" && (r.Real || r.Diff != 0) {
			t.Errorf("a recording against itself: %+v", r)
		}
	}
}

// rises sums the first n increments of a cycled list.
func rises(x []float64, n int) float64 {
	var s float64
	for i := range n {
		s += x[i%len(x)]
	}
	return s
}

func noBars(string) (history.Progress, func()) { return nil, func() {} }
