package history

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleettest"
)

// diagnoseJSON diagnoses s and returns the Diagnosis as JSON, with how
// many findings it has.
func diagnoseJSON(t *testing.T, s *Source) ([]byte, int) {
	t.Helper()
	defer s.Close()
	d, err := Diagnose(s, "", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b, len(d.Findings)
}

// fleet300 writes a generated fleet of 300 hosts whose hosts the rules
// find things on, a day at a 30-minute interval, and returns its file.
func fleet300(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	m, err := fleettest.Plan(fleettest.Options{Hosts: 300, Days: 1, Interval: 30 * time.Minute,
		End: time.Date(2026, 3, 10, 7, 0, 0, 0, time.UTC), Seed: 11}).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, m.Files[len(m.Files)-1])
}

// A text file read into memory is diagnosed exactly as through a store:
// a generated fleet of 300 hosts (more than one batch of instances judged
// on several goroutines), a day at a 30-minute interval, whose hosts the
// rules find things on, gives byte for byte the same report; and a file
// past the in-memory budget is read into a store instead, with the same
// report again.
func TestDiagnoseFromMemoryMatchesStore(t *testing.T) {
	if testing.Short() {
		t.Skip("diagnoses 300 hosts three times")
	}
	file := fleet300(t)
	st, err := Open(file, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, nf := diagnoseJSON(t, st)
	if nf == 0 {
		t.Fatalf("the fleet in %s has no findings: nothing compared", file)
	}

	mem, err := OpenDiagnosis(file, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mem.mem == nil || mem.Store != nil {
		t.Fatalf("OpenDiagnosis(%s) did not read the file into memory", file)
	}
	if len(mem.Instances) <= diagnoseBatch {
		t.Fatalf("%d instances: want more than a batch (%d)", len(mem.Instances), diagnoseBatch)
	}
	got, _ := diagnoseJSON(t, mem)
	if string(got) != string(want) {
		t.Errorf("diagnosed in memory, %s differs from through a store:\n%s", file, firstDiff(string(got), string(want)))
	}

	saved := memBudget
	memBudget = 64 << 10
	t.Cleanup(func() { memBudget = saved })
	over, err := OpenDiagnosis(file, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if over.Store == nil {
		t.Fatalf("OpenDiagnosis(%s) held it in memory past a budget of 64 KiB", file)
	}
	if got, _ := diagnoseJSON(t, over); string(got) != string(want) {
		t.Errorf("past the budget, %s differs from through a store:\n%s", file, firstDiff(string(got), string(want)))
	}
}

// firstDiff shows where a and b first differ.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return "got:  ..." + a[lo:min(len(a), i+200)] + "\nwant: ..." + b[lo:min(len(b), i+200)]
}
