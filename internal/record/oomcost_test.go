package record

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// cgroupSample is a sample of n cgroups with their usage, memory.stat
// split and limit, beside the other series a host's sample holds.
func cgroupSample(n int) *sample.Snapshot {
	s := &sample.Snapshot{Time: time.Unix(1_700_000_000, 0)}
	for i := range 2000 {
		s.Add("node_other_series", float64(i), "i", strconv.Itoa(i))
	}
	for i := range n {
		cg := "/cg-" + strconv.Itoa(i)
		s.Add("memdoctor_cgroup_memory_usage_bytes", 300<<20, "cgroup", cg)
		s.Add("memdoctor_cgroup_memory_anon_bytes", 200<<20, "cgroup", cg)
		s.Add("memdoctor_cgroup_memory_file_bytes", 90<<20, "cgroup", cg)
		s.Add("memdoctor_cgroup_memory_shmem_bytes", 1<<20, "cgroup", cg)
		s.Add("memdoctor_cgroup_memory_limit_bytes", 512<<20, "cgroup", cg)
	}
	return s
}

// TestOOMSeriesCostGrowsWithTheCgroups: adding the OOM series of a
// sample's cgroups costs the sample's index once, not again for each
// cgroup: with 2,000 other series, four times the cgroups cost 1.4 times
// as much, where building the index for each cgroup cost 4.4 times.
func TestOOMSeriesCostGrowsWithTheCgroups(t *testing.T) {
	cost := func(n int) (float64, *sample.Snapshot) {
		const runs = 5
		snaps := make([]*sample.Snapshot, runs)
		for i := range snaps {
			snaps[i] = cgroupSample(n)
		}
		h := oomHistory{}
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		for _, s := range snaps {
			h.addOOMSeries(s)
		}
		runtime.ReadMemStats(&b)
		return float64(b.TotalAlloc-a.TotalAlloc) / runs, snaps[0]
	}
	few, s := cost(20)
	if got := len(s.Select("memdoctor_cgroup_memory_oom_distance_bytes")); got != 20 {
		t.Fatalf("%d distances for 20 cgroups", got)
	}
	if v, ok := s.Get("memdoctor_cgroup_memory_oom_distance_bytes", "cgroup", "/cg-7"); !ok || v <= 0 || v > 512<<20 {
		t.Fatalf("distance of /cg-7: %v %v", v, ok)
	}
	many, _ := cost(80)
	t.Logf("20 cgroups: %.0f bytes, 80: %.0f (%.1fx)", few, many, many/few)
	if many > 2.5*few {
		t.Errorf("80 cgroups cost %.1fx what 20 do: the sample's index is built again for each cgroup", many/few)
	}
}
