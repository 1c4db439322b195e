package fleettest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
)

// TestManifestMatchesRules runs memdoctor's rules on every generated host
// (in memory, no Prometheus): the judged rules fire exactly where the
// manifest says.
func TestManifestMatchesRules(t *testing.T) {
	for _, o := range []Options{
		{Hosts: 60, Days: 15, Interval: 10 * time.Minute, End: time.Date(2026, 3, 10, 7, 0, 0, 0, time.UTC), Seed: 7},
		{Hosts: 90, Days: 15, Interval: 5 * time.Minute, End: time.Date(2026, 7, 1, 23, 35, 0, 0, time.UTC), Seed: 3},
	} {
		t.Run(fmt.Sprintf("seed%d", o.Seed), func(t *testing.T) {
			t.Parallel() // each plans and judges its own fleet
			checkManifest(t, Plan(o))
		})
	}
}

func checkManifest(t *testing.T, f *Fleet) {
	judged := map[string]bool{}
	for _, r := range JudgedRules {
		judged[r] = true
	}
	sick := 0
	for i, h := range f.Hosts {
		rep := diagnose.Run(diagnose.Data{Window: f.Window(i), Source: "fleettest"})
		var got []string
		for _, fd := range rep.Findings {
			if judged[fd.ID] && !slices.Contains(got, fd.ID) {
				got = append(got, fd.ID)
			}
		}
		slices.Sort(got)
		want := h.Expect
		if len(want) > 0 {
			sick++
		}
		var extra []string
		for _, r := range got {
			if !slices.Contains(want, r) && !slices.Contains(h.Tolerate, r) {
				extra = append(extra, r)
			}
		}
		missing := false
		for _, r := range want {
			missing = missing || !slices.Contains(got, r)
		}
		if len(extra) > 0 || missing {
			for _, fd := range rep.Findings {
				t.Logf("%s: %s %s", h.Instance, fd.ID, fd.Summary)
			}
			t.Errorf("%s (%s, %s, %v, reboots %v): rules fired %v, manifest expects %v", h.Instance, h.Release, h.Role, h.Pathologies, h.Reboots, got, want)
		}
	}
	if sick < 8 {
		t.Errorf("only %d hosts with pathologies", sick)
	}
}
