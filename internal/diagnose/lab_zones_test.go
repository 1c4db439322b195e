package diagnose_test

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
)

// On Debian's 6.1 (the kernel lab) the empty Movable zone is a lowmem
// zone to the kernel (0/0/0), and the other zones' watermarks were
// computed at boot, before the initramfs was freed: the recomputation
// follows the kernel's version, and the boot-time difference is explained
// (how many pages fewer were managed), not reported as a mismatch of
// unknown cause.
func TestLabWatermarksFollowKernel61(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"healthy-6.1-x86_64-v2", "dying-cgroups-6.1-x86_64-v2"} {
		s := baseSnapshot(t, name)
		r := diagnose.Run(diagnose.Data{Latest: &s, Source: "test"})
		for _, z := range r.Zones {
			if z.Zone == "Movable" && (z.MatchesKernel == nil || !*z.MatchesKernel) {
				t.Errorf("%s: Movable: kernel %d/%d/%d, recomputed %+v", name, z.MinPages, z.LowPages, z.HighPages, z.Computed)
			}
		}
		d := r.Watermarks.BootDeficitPages
		// The initramfs (~40 MB) and init memory: some thousands of pages.
		if d < 1000 || d > 65536 {
			t.Errorf("%s: boot deficit %d pages; mismatches %q", name, d, r.Watermarks.Mismatches)
		}
		var note string
		for _, n := range r.Notes {
			if n.Source == "proc/zoneinfo" {
				note = n.Message
			}
		}
		if !strings.Contains(note, "at boot, before the initramfs and init memory were freed") {
			t.Errorf("%s: zoneinfo note %q", name, note)
		}
	}
	// The development hosts' 6.18 still match with Movable capped like
	// HighMem.
	s := baseSnapshot(t, "healthy-6.18-x86_64-hybrid")
	for _, z := range diagnose.Run(diagnose.Data{Latest: &s, Source: "test"}).Zones {
		if z.MatchesKernel == nil || !*z.MatchesKernel {
			t.Errorf("6.18 %s: kernel %d/%d/%d, recomputed %+v", z.Zone, z.MinPages, z.LowPages, z.HighPages, z.Computed)
		}
	}
}
