package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// headPlan is SQLite's plan for reading one instance's head rows, as
// headStatuses does.
func headPlan(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN SELECT instance, min(t), max(t), count(*) FROM head WHERE instance = ? GROUP BY instance", "h")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

// An instance's head rows are found through an index: without it every
// Append of a store holding a fleet scanned every instance's head rows
// (ingesting n instances cost n²).
func TestHeadIndexed(t *testing.T) {
	t.Parallel()
	st, path := openTest(t, Options{})
	if err := st.Append("h", snapshotAt(t0, "x", 1)); err != nil {
		t.Fatal(err)
	}
	if plan := headPlan(t, st.rdb); !strings.Contains(plan, "USING") || !strings.Contains(plan, "head_instance") {
		t.Errorf("head rows of one instance: plan %q, want the head_instance index", plan)
	}
	// A store made before the index: read-only it reads as it is, the
	// first read-write open adds the index.
	if _, err := st.wdb.Exec("DROP INDEX head_instance"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan := headPlan(t, ro.rdb); strings.Contains(plan, "head_instance") {
		t.Fatalf("index dropped, plan still %q", plan)
	}
	if got, err := ro.Latest("h", time.Time{}, 0); err != nil || got.Value("x") != 1 {
		t.Errorf("read-only open of a store without the index: %v, %v", got, err)
	}
	ro.Close()
	rw, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if plan := headPlan(t, rw.rdb); !strings.Contains(plan, "head_instance") {
		t.Errorf("after a read-write open: plan %q, want the head_instance index", plan)
	}
}

func fleetSnapshots(inst, at int, n int) []*sample.Snapshot {
	var out []*sample.Snapshot
	for i := range n {
		sc := &sample.Snapshot{Time: t0.Add(time.Duration(at+i) * time.Hour)}
		sc.Add("mem", float64(inst*1000+at+i), "job", "node")
		sc.Add("swap", float64(inst))
		out = append(out, sc)
	}
	return out
}

// AppendBatch stores many instances in one transaction with the same
// result as one Append per batch, and all or nothing.
func TestAppendBatch(t *testing.T) {
	t.Parallel()
	one, _ := openTest(t, Options{ChunkRange: 2 * time.Hour})
	many, _ := openTest(t, Options{ChunkRange: 2 * time.Hour})
	var batches []Batch
	for i := range 50 {
		inst := fmt.Sprintf("host-%02d", i)
		// An instance in two batches, the second crossing chunk ranges.
		batches = append(batches, Batch{inst, fleetSnapshots(i, 0, 1)}, Batch{inst, fleetSnapshots(i, 1, 4)})
	}
	batches = append(batches, Batch{"empty", nil})
	for _, b := range batches {
		if err := one.Append(b.Instance, b.Snapshots...); err != nil {
			t.Fatal(err)
		}
	}
	if err := many.AppendBatch(batches); err != nil {
		t.Fatal(err)
	}
	dump := func(st *Store) map[string][]*sample.Series {
		out := map[string][]*sample.Series{}
		insts, err := st.Instances()
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range insts {
			if out[in], err = st.Select(Query{Instance: in}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	want := dump(one)
	if len(want) != 50 {
		t.Fatalf("%d instances appended one by one, want 50", len(want))
	}
	if diff := cmp.Diff(dump(many), want); diff != "" {
		t.Errorf("AppendBatch differs from Append one by one (-batch +one):\n%s", diff)
	}

	// A batch out of order: nothing of the call is stored, the error
	// names the batch, and the store goes on.
	bad := []Batch{{"new-1", fleetSnapshots(1, 0, 1)}, {"host-03", fleetSnapshots(3, 2, 1)}, {"new-2", fleetSnapshots(2, 0, 1)}}
	err := many.AppendBatch(bad)
	var be *BatchError
	if !errors.As(err, &be) || be.Index != 1 || !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("AppendBatch with an old scrape of host-03 = %v, want a BatchError at 1 wrapping ErrOutOfOrder", err)
	}
	if insts, _ := many.Instances(); len(insts) != 50 {
		t.Errorf("after a failed AppendBatch: %d instances, want the 50 of before", len(insts))
	}
	if diff := cmp.Diff(dump(many), want); diff != "" {
		t.Errorf("a failed AppendBatch changed the store (-got +want):\n%s", diff)
	}
	if err := many.AppendBatch([]Batch{{"new-1", fleetSnapshots(1, 0, 1)}, {"host-03", fleetSnapshots(3, 5, 1)}}); err != nil {
		t.Fatalf("AppendBatch after a failed one: %v", err)
	}
	if got, err := many.Latest("host-03", time.Time{}, 0); err != nil || got.Value("swap") != 3 || !got.Time.Equal(t0.Add(5*time.Hour)) {
		t.Errorf("host-03 after the retry: %v, %v", got, err)
	}
	if err := many.AppendBatch([]Batch{{"", fleetSnapshots(1, 0, 1)}}); !errors.As(err, &be) || be.Index != 0 {
		t.Errorf("AppendBatch with an empty instance name = %v", err)
	}
}
