package fleettest

import (
	"fmt"
	"testing"
	"time"
)

// TestManifestAcrossSeedsAndHours plans fleets with other seeds and with
// the data ending at other hours of the day (reboots then land anywhere,
// the last hours included, and the day's cycle is cut elsewhere): the rules
// must still fire on exactly the injected hosts.
func TestManifestAcrossSeedsAndHours(t *testing.T) {
	if testing.Short() {
		t.Skip("20 fleets of 60 hosts")
	}
	for _, seed := range []uint64{11, 7, 3, 5} {
		for _, h := range []int{0, 5, 11, 17, 22} {
			o := Options{Hosts: 60, Days: 15, Interval: 10 * time.Minute, End: time.Date(2026, 11, 22, h, 0, 0, 0, time.UTC), Seed: seed}
			t.Run(fmt.Sprintf("seed%d-%02dh", seed, h), func(t *testing.T) {
				t.Parallel() // each plans and judges its own fleet
				checkManifest(t, Plan(o))
			})
		}
	}
}
