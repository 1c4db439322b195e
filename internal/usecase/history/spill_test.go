package history

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// Summaries kept in the temporary file read back as they were added, in
// order: names of any bytes and length, times in UTC, local and fixed
// zones (which the JSON prints), steps, counts and whether the instance
// had a host's series; the file is gone from its directory as soon as it
// is made.
func TestSpillReadsBackWhatWasAdded(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	sp, err := newSpill()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the temporary file is still in %s: %v", dir, left)
	}
	t0 := time.Date(2026, 3, 10, 7, 0, 0, 123456789, time.UTC)
	want := []InstanceResult{
		{Instance: "host-000001:9100", From: t0, To: t0.Add(time.Hour), StepSeconds: 15, Series: 3, Findings: 1, host: true},
		{Instance: "", From: time.Time{}, To: time.Time{}},
		{Instance: "db \"7\"\n\x00é", From: t0.In(time.FixedZone("x", 5*3600+1800)), To: t0.In(time.Local), StepSeconds: 0.25, Series: 1 << 40, Findings: 7},
		{Instance: strings.Repeat("n", 70_000), From: t0, To: t0, StepSeconds: 648, host: true},
		// A name may be as long as a line of text exposition (16 MiB).
		{Instance: strings.Repeat("m", 3<<20), From: t0, To: t0, StepSeconds: 1},
	}
	for range 3 {
		for _, r := range want {
			sp.add(r)
		}
	}
	var got []InstanceResult
	if err := sp.each(func(r InstanceResult) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3*len(want) {
		t.Fatalf("%d summaries read back, want %d", len(got), 3*len(want))
	}
	for i, g := range got {
		w := want[i%len(want)]
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) || g.host != w.host || !g.From.Equal(w.From) || !g.To.Equal(w.To) {
			t.Errorf("summary %d read back as %.200s (host %v), want %.200s (host %v)", i, gj, g.host, wj, w.host)
		}
	}
}

// A diagnosis of more than spillOver instances keeps their summaries in a
// temporary file and says exactly what one that keeps them in memory
// says: a generated fleet of 300 hosts whose hosts the rules find things
// on, a day at a 30-minute interval.
func TestDiagnoseSpilledSaysWhatKept(t *testing.T) {
	if testing.Short() {
		t.Skip("diagnoses 300 hosts twice")
	}
	file := fleet300(t)
	diagnose := func() (head []byte, insts []string, spilled bool) {
		s, err := OpenDiagnosis(file, "", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		d, err := Diagnose(s, "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		spilled = d.spill != nil
		if err := d.EachInstance(func(r InstanceResult) error {
			b, err := json.Marshal(r)
			insts = append(insts, string(b))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(insts) != d.NumInstances() {
			t.Fatalf("%d instances read of %d", len(insts), d.NumInstances())
		}
		h := *d
		h.Instances = nil
		head, err = json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		return head, insts, spilled
	}
	wantHead, wantInsts, spilled := diagnose()
	if spilled {
		t.Fatalf("300 instances spilled with spillOver %d", spillOver)
	}
	defer func(n int) { spillOver = n }(spillOver)
	spillOver = 100
	gotHead, gotInsts, spilled := diagnose()
	if !spilled {
		t.Fatal("300 instances not spilled with spillOver 100")
	}
	if !strings.Contains(string(wantHead), `"findings":[{`) {
		t.Fatalf("the fleet in %s has no findings: nothing compared", file)
	}
	if string(gotHead) != string(wantHead) {
		t.Errorf("the spilled diagnosis differs from the kept one:\n%.500s\nagainst\n%.500s", gotHead, wantHead)
	}
	if strings.Join(gotInsts, "\n") != strings.Join(wantInsts, "\n") || len(gotInsts) != 300 {
		t.Errorf("the spilled summaries (%d) differ from the kept ones (%d)", len(gotInsts), len(wantInsts))
	}
}
