package source

import (
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/incidenttest"
)

func TestIncident1Shape50(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := incidenttest.Incident1Options{Days: 14, Interval: 30 * time.Minute, Shape: incidenttest.Shape50}
	if err := incidenttest.WriteIncident1CronDir(dir, o); err != nil {
		t.Fatal(err)
	}
	ms := newMemSink(t)
	st, err := Read(dir, IngestOptions{}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Snapshots, 14*48; got != want {
		t.Fatalf("scrapes %d, want %d", got, want)
	}
	inst := filepath.Base(dir)
	ts, cg := ms.series(inst, "node_cgroups_cgroups", "subsys_name", "memory")
	for i := 1; i < len(cg); i++ {
		if cg[i] < cg[i-1] {
			t.Fatalf("5.0 shape: memory cgroups dropped from %v to %v at %s", cg[i-1], cg[i], ts[i])
		}
	}
	if got, want := slopePerDay(ts, cg), 10000.0; math.Abs(got-want)/want > 0.03 {
		t.Errorf("memory cgroups grow %.0f/day, want ~%.0f", got, want)
	}
	ts, su := ms.series(inst, "node_memory_SUnreclaim_bytes")
	if got, want := slopePerDay(ts, su)*7, 4e9; math.Abs(got-want)/want > 0.05 {
		t.Errorf("SUnreclaim grows %.3g bytes/week, want ~%.3g", got, want)
	}
	_, av := ms.series(inst, "node_memory_MemAvailable_bytes")
	if got, want := av[0]-av[len(av)-1], su[len(su)-1]-su[0]; got < want {
		t.Errorf("MemAvailable fell %.3g bytes, less than SUnreclaim grew (%.3g)", got, want)
	}
	// The growth is in the named caches.
	for _, c := range []string{"mem_cgroup", "kmalloc-4k", "kmalloc-512", "kmalloc-cg-4k"} {
		ts, v := ms.series(inst, "node_slabinfo_objects", "slab", c)
		if s := slopePerDay(ts, v); s <= 0 {
			t.Errorf("slab %s: objects slope %.1f/day, want growth", c, s)
		}
	}
	ts, v := ms.series(inst, "node_slabinfo_objects", "slab", "ext4_inode_cache")
	if s := slopePerDay(ts, v); s != 0 {
		t.Errorf("slab ext4_inode_cache: slope %.1f/day, want none", s)
	}
	// The kernel release is known.
	last := ms.snapshots[inst][len(ms.snapshots[inst])-1]
	if ms := last.Select("node_uname_info"); len(ms) != 1 || ms[0].Labels.Get("release") != "5.0.0-1-amd64" {
		t.Errorf("node_uname_info %v, want release 5.0.0-1-amd64", ms)
	}
}

func TestIncident1Shape53(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := incidenttest.Incident1Options{Days: 7, Interval: 15 * time.Minute, Shape: incidenttest.Shape53, Gzip: true, PerDayDirs: true, Seconds: true}
	if err := incidenttest.WriteIncident1CronDir(dir, o); err != nil {
		t.Fatal(err)
	}
	ms := newMemSink(t)
	st, err := Read(dir, IngestOptions{Instance: "game-17"}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Snapshots, 7*96; got != want {
		t.Fatalf("scrapes %d, want %d", got, want)
	}
	ts, cg := ms.series("game-17", "node_cgroups_cgroups", "subsys_name", "memory")
	drops := 0
	for i := 1; i < len(cg); i++ {
		if cg[i] < cg[i-1] {
			drops++
			if ts[i].Hour() != 4 || ts[i].Minute() != 0 {
				t.Errorf("drop at %s, want 04:00", ts[i])
			}
			if cg[i] > 0.05*cg[i-1]+100 {
				t.Errorf("drop at %s to %v from %v: want near the base", ts[i], cg[i], cg[i-1])
			}
		}
	}
	if drops != 7 {
		t.Errorf("%d drops in 7 days, want 7 (one at 04:00 every day)", drops)
	}
	if peak := slices.Max(cg); peak < 9000 {
		t.Errorf("peak %v memory cgroups, want ~10000 (a day's worth)", peak)
	}
	_, su := ms.series("game-17", "node_memory_SUnreclaim_bytes")
	if d := su[len(su)-1] - su[0]; math.Abs(d) > 200e6 {
		t.Errorf("5.3 shape: SUnreclaim moved %.3g bytes over a week, want no trend", d)
	}
}
