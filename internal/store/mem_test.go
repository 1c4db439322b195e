package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// memFleet makes batches of a few instances over six hours at 10 s, their
// snapshots appended in several calls, the instances interleaved: series
// that come and go, one given twice in a snapshot, labels out of order,
// values that are negative, zero or huge.
func memFleet(seed uint64) [][]Batch {
	r := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var calls [][]Batch
	const perCall = 97
	for c := 0; c*perCall < 6*360; c++ {
		var call []Batch
		for inst := range 3 {
			b := Batch{Instance: fmt.Sprintf("host-%d:9100", 2-inst)}
			for k := c * perCall; k < min((c+1)*perCall, 6*360); k++ {
				if r.IntN(10) == 0 {
					continue // a missed scrape
				}
				sc := &sample.Snapshot{Time: start.Add(time.Duration(k)*10*time.Second + time.Duration(r.IntN(900))*time.Millisecond)}
				sc.AddMetric(sample.Metric{Name: "node_memory_MemAvailable_bytes", Value: float64(r.Int64N(1 << 40))})
				sc.AddMetric(sample.Metric{Name: "node_memory_MemAvailable_bytes", Value: -1}) // twice: the first stays
				for p := range 3 + inst {
					if (k/200+p)%4 == 0 {
						continue // gone for a while
					}
					sc.AddMetric(sample.Metric{Name: "memdoctor_process_rss_bytes",
						Labels: sample.Labels{{Name: "pid", Value: fmt.Sprint(100 + p)}, {Name: "comm", Value: fmt.Sprintf("w\"%d\\", p)}},
						Value:  r.NormFloat64() * 1e9})
				}
				sc.AddMetric(sample.Metric{Name: "a_counter_total", Value: float64(k)})
				b.Snapshots = append(b.Snapshots, sc)
			}
			call = append(call, b)
		}
		calls = append(calls, call)
	}
	return calls
}

// A Mem reads what a Store holding the same samples reads: the instances,
// their time ranges, every series raw and in steps (with each choice of
// aggregates, over part of the range, by name and by label), and the
// latest values at several times with and without a maximum age.
func TestMemReadsAsStore(t *testing.T) {
	t.Parallel()
	st, _ := openTest(t, Options{})
	mem := NewMem(1 << 30)
	for _, call := range memFleet(5) {
		if err := st.AppendBatch(call); err != nil {
			t.Fatal(err)
		}
		if err := mem.AppendBatch(call); err != nil {
			t.Fatal(err)
		}
	}
	mem.Seal()
	wantI, err := st.Instances()
	if err != nil {
		t.Fatal(err)
	}
	gotI, _ := mem.Instances()
	if diff := cmp.Diff(wantI, gotI); diff != "" || len(gotI) != 3 {
		t.Fatalf("instances (-store +mem):\n%s", diff)
	}
	for _, inst := range wantI {
		f, l, err := st.TimeRange(inst)
		if err != nil {
			t.Fatal(err)
		}
		mf, ml, err := mem.TimeRange(inst)
		if err != nil || !mf.Equal(f) || !ml.Equal(l) {
			t.Fatalf("%s: time range %v … %v, %v; the store's %v … %v", inst, mf, ml, err, f, l)
		}
		mid := f.Add(l.Sub(f) / 3)
		for _, q := range []Query{
			{},
			{Step: 5 * time.Minute},
			{Step: 7 * time.Minute, From: mid, To: l.Add(-time.Hour), Keep: map[string]sample.Aggregates{"memdoctor_process_rss_bytes": sample.KeepMax | sample.KeepMean}},
			{Names: []string{"memdoctor_process_rss_bytes", "a_counter_total"}, From: mid},
			{Names: []string{"memdoctor_process_rss_bytes"}, Match: []string{"pid", "101"}, Step: time.Hour, From: f, To: l},
			{To: f.Add(-time.Hour)}, // before the data: nothing
		} {
			q.Instance = inst
			want, err := st.Select(q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mem.Select(q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: select %+v (-store +mem):\n%s", inst, q, diff)
			}
		}
		for _, at := range []time.Time{{}, mid, f, f.Add(-time.Second), l.Add(-30 * time.Minute)} {
			for _, age := range []time.Duration{0, time.Minute} {
				want, werr := st.Latest(inst, at, age)
				got, gerr := mem.Latest(inst, at, age)
				if errors.Is(werr, ErrNoData) != errors.Is(gerr, ErrNoData) || (werr == nil) != (gerr == nil) {
					t.Fatalf("%s: latest at %v: %v; the store's %v", inst, at, gerr, werr)
				}
				if werr != nil {
					continue
				}
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(sample.Snapshot{})); diff != "" {
					t.Errorf("%s: latest at %v within %v (-store +mem):\n%s", inst, at, age, diff)
				}
			}
		}
	}
}

// A Mem refuses what a Store refuses (a snapshot not after the newest, a
// bad name) and what is past its budget, and Forget gives back what an
// instance held.
func TestMemRefusesAndForgets(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	snap := func(t time.Time, name string) *sample.Snapshot {
		sc := &sample.Snapshot{Time: t}
		sc.AddMetric(sample.Metric{Name: name, Value: 1})
		return sc
	}
	m := NewMem(1 << 20)
	if err := m.AppendBatch([]Batch{{Instance: "a", Snapshots: []*sample.Snapshot{snap(t0, "x")}}}); err != nil {
		t.Fatal(err)
	}
	err := m.AppendBatch([]Batch{{Instance: "a", Snapshots: []*sample.Snapshot{snap(t0, "x")}}})
	var be *BatchError
	if !errors.Is(err, ErrOutOfOrder) || !errors.As(err, &be) {
		t.Errorf("a snapshot at the newest time: %v, want ErrOutOfOrder in a BatchError", err)
	}
	if err := m.AppendBatch([]Batch{{Instance: "a", Snapshots: []*sample.Snapshot{snap(t0.Add(time.Second), "bad{name")}}}); err == nil {
		t.Error("a metric name with { was taken")
	}
	held := m.Held()
	var big []*sample.Snapshot
	for i := range 100_000 {
		big = append(big, snap(t0.Add(time.Duration(i)*time.Second), "y"))
	}
	if err := m.AppendBatch([]Batch{{Instance: "b", Snapshots: big}}); !errors.Is(err, ErrMemFull) {
		t.Fatalf("100,000 samples in a budget of 1 MiB: %v, want ErrMemFull", err)
	}
	m.Forget("b")
	if m.Held() != held {
		t.Errorf("after forgetting b, %d bytes held, want %d as before it", m.Held(), held)
	}
	if got, _ := m.Instances(); len(got) != 1 || got[0] != "a" {
		t.Errorf("instances after forgetting b: %v, want [a]", got)
	}
}
