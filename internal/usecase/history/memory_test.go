package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/incidenttest"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
)

// windowBytes is what the points and step aggregates of w take.
func windowBytes(w *sample.Window) int {
	n := 0
	for _, s := range w.Series {
		n += cap(s.Points)*16 + (cap(s.Max)+cap(s.Min)+cap(s.Mean))*8
	}
	return n
}

// A diagnosis reads only the step aggregates rules read (the minima and
// maxima of the few series they declare, never the means): the same
// findings as from every aggregate, in well under half the memory.
func TestDiagnoseWindowKeepsOnlyReadAggregates(t *testing.T) {
	t.Parallel()
	s, err := Open(fleetFile, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rules := diagnose.Rules()
	names, keep := diagnose.WindowSeries(rules), diagnose.WindowAggregates(rules)
	if keep["node_memory_MemAvailable_bytes"]&sample.KeepMin == 0 || keep["memdoctor_process_rss_bytes"]&sample.KeepMax == 0 {
		t.Fatalf("WindowAggregates %v: want the minima of MemAvailable and the maxima of process RSS (memory_baseline_exceeded reads them)", keep)
	}
	findings := 0
	for _, inst := range s.Instances {
		first, last, err := s.Store.TimeRange(inst)
		if err != nil {
			t.Fatal(err)
		}
		win, err := StoreWindow(first, last, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if win.Step == 0 {
			t.Fatalf("%s: raw samples over %v; want a stepped read", inst, win.Range())
		}
		full, _, err := s.window(store.Query{Instance: inst, Names: names}, win)
		if err != nil {
			t.Fatal(err)
		}
		lean, _, err := s.window(store.Query{Instance: inst, Names: names, Keep: keep}, win)
		if err != nil {
			t.Fatal(err)
		}
		for i, ls := range lean.Series {
			fs := full.Series[i]
			if ls.Key() != fs.Key() || len(ls.Points) != len(fs.Points) || len(fs.Mean) != len(fs.Points) {
				t.Fatalf("%s: series %d: %s with %d points, the full read %s with %d", inst, i, ls.Key(), len(ls.Points), fs.Key(), len(fs.Points))
			}
			k := keep[ls.Name]
			if (ls.Min != nil) != (k&sample.KeepMin != 0) || (ls.Max != nil) != (k&sample.KeepMax != 0) || ls.Mean != nil {
				t.Errorf("%s: %s keeps min %v max %v mean %v; declared %b", inst, ls.Key(), ls.Min != nil, ls.Max != nil, ls.Mean != nil, k)
			}
			for j, p := range ls.Points {
				if p != fs.Points[j] || (ls.Min != nil && ls.Min[j] != fs.Min[j]) || (ls.Max != nil && ls.Max[j] != fs.Max[j]) {
					t.Fatalf("%s: %s step %d differs from the full read", inst, ls.Key(), j)
				}
			}
		}
		if lb, fb := windowBytes(lean), windowBytes(full); lb*2 > fb {
			t.Errorf("%s: the diagnosis window takes %d bytes, every aggregate %d: want under half", inst, lb, fb)
		}
		latest, err := s.Store.Latest(inst, win.To, 3*max(win.Step, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		a := diagnose.Run(diagnose.Data{Latest: latest, Window: full, Source: "store", Notes: s.Notes})
		b := diagnose.Run(diagnose.Data{Latest: latest, Window: lean, Source: "store", Notes: s.Notes})
		ja, _ := json.Marshal(a.Findings)
		jb, _ := json.Marshal(b.Findings)
		if string(ja) != string(jb) {
			t.Errorf("%s: findings differ without the unread aggregates:\n full: %.400s\n lean: %.400s", inst, ja, jb)
		}
		findings += len(a.Findings)
	}
	if findings == 0 {
		t.Fatalf("%s: no findings to compare", fleetFile)
	}
}

// peakHeap runs fn while sampling the heap in use, and returns its peak.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var peak uint64
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return max(peak, ms.HeapInuse)
}

// Diagnosing a 30-day recording at 15 s (bench/gen30d; bench/diagnose.sh
// names it in MEMDOCTOR_BENCH_DB) stays well under the 100 MiB of RSS it
// aims at: its heap in use peaks under 150 MiB (it was about 200 MiB when
// every series kept every step aggregate).
func TestDiagnose30DaysPeakHeap(t *testing.T) {
	db := os.Getenv("MEMDOCTOR_BENCH_DB")
	if db == "" {
		t.Skip("MEMDOCTOR_BENCH_DB names no 30-day store (bench/diagnose.sh makes one)")
	}
	s, err := Open(db, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var d *Diagnosis
	peak := peakHeap(func() {
		if d, err = Diagnose(s, "", ""); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%s: %d series at a %v step, %d findings, heap in use peaked at %.1f MiB",
		db, d.Instances[0].Series, d.Instances[0].Step(), len(d.Findings), float64(peak)/(1<<20))
	if d.Instances[0].To.Sub(d.Instances[0].From) < 29*24*time.Hour {
		t.Fatalf("%s spans %v: want 30 days", db, d.Instances[0].To.Sub(d.Instances[0].From))
	}
	if peak > 150<<20 {
		t.Errorf("diagnosing %s: heap in use peaked at %.1f MiB, want under 150 MiB", db, float64(peak)/(1<<20))
	}
}

// The slab caches slab_unreclaimable_growth ranks are read only at the
// ends of the last segment: a diagnosis keeps those points alone and
// finds the same, caches included (incident 1's 5.0 rack, 14 days).
func TestDiagnoseThinsEndsOnlySeries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opt := incidenttest.Incident1Options{Days: 14, Interval: 10 * time.Minute, Shape: incidenttest.Shape50,
		Capture: filepath.Join("..", "..", "..", incidenttest.Incident1BaseCapture)}
	if err := incidenttest.WriteIncident1CronDir(dir, opt); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inst := s.Instances[0]
	first, last, err := s.Store.TimeRange(inst)
	if err != nil {
		t.Fatal(err)
	}
	win, err := StoreWindow(first, last, "", "")
	if err != nil {
		t.Fatal(err)
	}
	rules := diagnose.Rules()
	full, nf, err := s.diagnosisWindow(inst, win, rules, false)
	if err != nil {
		t.Fatal(err)
	}
	thin, nt, err := s.diagnosisWindow(inst, win, rules, true)
	if err != nil {
		t.Fatal(err)
	}
	slabs := len(thin.Select("memdoctor_slabinfo_size_bytes"))
	if nf != nt || slabs < 2 || len(full.Select("memdoctor_slabinfo_size_bytes")) != slabs {
		t.Fatalf("%d and %d series read, %d slab caches thinned: want the same count and caches", nf, nt, slabs)
	}
	for _, x := range thin.Select("memdoctor_slabinfo_size_bytes") {
		if len(x.Points) > 4 {
			t.Errorf("%s kept %d points: want the ends of its segments only", x.Key(), len(x.Points))
		}
	}
	if tb, fb := windowBytes(thin), windowBytes(full); tb >= fb {
		t.Errorf("thinned window %d bytes, full %d", tb, fb)
	}
	latest, err := s.Store.Latest(inst, win.To, 3*max(win.Step, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	a := diagnose.Run(diagnose.Data{Latest: latest, Window: full, Source: "store", Notes: s.Notes})
	b := diagnose.Run(diagnose.Data{Latest: latest, Window: thin, Source: "store", Notes: s.Notes})
	ja, _ := json.Marshal(a.Findings)
	jb, _ := json.Marshal(b.Findings)
	if string(ja) != string(jb) {
		t.Fatalf("findings differ when the slab caches are thinned:\n full: %.600s\n thin: %.600s", ja, jb)
	}
	caches := 0
	for _, f := range a.Findings {
		for _, e := range f.Evidence {
			if f.ID == "slab_unreclaimable_growth" && e.Name == "cache" {
				caches++
			}
		}
	}
	if caches == 0 {
		t.Fatalf("slab_unreclaimable_growth names no growing cache: %s", ja)
	}
}
