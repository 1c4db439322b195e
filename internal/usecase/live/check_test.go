package live

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// check on a replayed capture finds what its golden says, with no
// options given (no runtimes, no focus: processes ranked by PSS).
func TestCheckReplayedCapture(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"dying-cgroups", "low-available", "healthy"} {
		capPath := "../../../testdata/captures/" + name + "-6.18-x86_64-hybrid.txtar"
		h, err := OpenHost("", capPath)
		if err != nil {
			t.Fatal(err)
		}
		if h.Live() {
			t.Fatalf("%s: replay taken for the live host", capPath)
		}
		rep, err := Check(context.Background(), h, CheckOptions{Top: 10})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("../../../testdata/golden/check-" + name + "-6.18-x86_64-hybrid.json")
		if err != nil {
			t.Fatal(err)
		}
		var golden struct {
			Findings []struct {
				ID string `json:"id"`
			} `json:"findings"`
		}
		if err := json.Unmarshal(b, &golden); err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, f := range rep.Findings {
			got = append(got, f.ID)
		}
		for _, f := range golden.Findings {
			want = append(want, f.ID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: findings %v, the golden has %v", name, got, want)
		}
		if rep.Cost != nil {
			t.Errorf("%s: a replay has a cost of reading this host", name)
		}
		for i := 1; i < len(rep.Processes); i++ {
			a, b := rep.Processes[i-1].PSSBytes, rep.Processes[i].PSSBytes
			if a != nil && b != nil && *a < *b {
				t.Errorf("%s: processes not ranked by PSS at %d", name, i)
			}
		}
	}
	if _, err := OpenHost("", "../../../testdata/captures/missing.txtar"); err == nil {
		t.Error("a missing capture opened")
	}
}
