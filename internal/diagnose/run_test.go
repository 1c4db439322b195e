package diagnose_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/seriestest"
)

// Run is the one way in: what the data holds decides what is judged. A
// single reading leaves the trend rules for a time range; an earlier
// reading gives the runtimes' recent rates; a window alone gives its
// latest state and the trend rules.
func TestRunWhatTheDataHolds(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1767225600, 0)
	reading := func(at time.Time, gcSeconds float64) *sample.Snapshot {
		s := &sample.Snapshot{Time: at}
		s.Add("node_memory_MemTotal_bytes", 16e9)
		s.Add("node_memory_MemAvailable_bytes", 8e9)
		s.Add("memdoctor_runtime_info", 1, "target", "pid/42", "runtime", "go", "pid", "42")
		s.Add("memdoctor_runtime_gc_seconds_total", gcSeconds, "target", "pid/42")
		return s
	}
	earlier, later := reading(t0, 10), reading(t0.Add(10*time.Second), 13)

	one := diagnose.Run(diagnose.Data{Latest: later, Source: "test"})
	if len(one.Runtimes) != 1 || one.Runtimes[0].Recent != nil {
		t.Fatalf("one reading: runtimes %+v, want one without recent rates", one.Runtimes)
	}
	i := slices.IndexFunc(one.Coverage.NotEvaluated, func(s model.RuleSkip) bool { return s.ID == "available_memory_decline" })
	if i < 0 || one.Coverage.NotEvaluated[i].Reason != model.SkipNeedsRange {
		t.Errorf("one reading: available_memory_decline %+v, want not evaluated for want of a range", one.Coverage.NotEvaluated)
	}

	two := diagnose.Run(diagnose.Data{Latest: later, Earlier: earlier, Source: "test"})
	if r := two.Runtimes[0].Recent; r == nil || r.Seconds != 10 || r.GCSeconds != 3 || r.GCTimeShare == nil || *r.GCTimeShare != 0.3 {
		t.Fatalf("two readings 10 s apart, 3 s of GC: recent %+v, want 3 s over 10 s (30%%)", r)
	}
	if two.Info.Time != later.Time || two.Info.Source != "test" {
		t.Errorf("two readings: host %+v, want the later reading's time and the source given", two.Info)
	}

	b, err := os.ReadFile("testdata/available_memory_decline/fire_leak.series")
	if err != nil {
		t.Fatal(err)
	}
	w := seriestest.MustParse(t, string(b))
	rng := diagnose.Run(diagnose.Data{Window: w, Source: "store"})
	if !slices.Contains(rng.Coverage.Evaluated, "available_memory_decline") {
		t.Errorf("window: evaluated %v, want the trend rule", rng.Coverage.Evaluated)
	}
	end := w.Get("node_memory_MemTotal_bytes").Points
	if got, want := rng.Info.Time.UnixMilli(), end[len(end)-1].T; got != want || rng.Accounting.TotalBytes != 16e9 {
		t.Errorf("window: host at %d with %d bytes, want its last point %d, 16e9 bytes", got, rng.Accounting.TotalBytes, want)
	}
}
