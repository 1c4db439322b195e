package model

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// A v2 memory.stat (6.1) of a cgroup with 200 MiB of anon, 100 MiB of
// tmpfs and 600 MiB of page cache, 1 GiB limit.
func TestOOMMemoryOfV2(t *testing.T) {
	const mi = 1 << 20
	stat := map[string]int64{"anon": 200 * mi, "file": 700 * mi, "shmem": 100 * mi, "kernel": 30 * mi,
		"slab_reclaimable": 10 * mi, "active_file": 150 * mi, "inactive_file": 450 * mi, "file_dirty": 3 * mi, "file_writeback": 1 * mi}
	limit := int64(1024 * mi)
	m := OOMMemoryOf(stat, 930*mi, &limit)
	if m.KernelBytes != 20*mi || m.KernelEstimated {
		t.Errorf("kernel = %d (estimated %v), want 20 MiB from kernel − slab_reclaimable", m.KernelBytes, m.KernelEstimated)
	}
	if m.UnreclaimableBytes != 320*mi {
		t.Errorf("unreclaimable = %d MiB, want 320 (anon 200 + shmem 100 + kernel 20)", m.UnreclaimableBytes/mi)
	}
	if m.DistanceBytes == nil || *m.DistanceBytes != 704*mi {
		t.Errorf("distance = %v, want 704 MiB", m.DistanceBytes)
	}
	if m.WorkingSetBytes != 480*mi || m.DirtyBytes != 4*mi {
		t.Errorf("working set %d MiB dirty %d MiB, want 480 and 4", m.WorkingSetBytes/mi, m.DirtyBytes/mi)
	}
	why := m.Why()
	for _, w := range []string{"working set (kubectl top) 480 MiB", "450 MiB inactive", "320 MiB reclaim cannot take back"} {
		if !strings.Contains(why, w) {
			t.Errorf("Why() = %q, lacks %q", why, w)
		}
	}
}

// Kernels before the kernel key (5.x) sum its parts; v1 has none and the
// kernel part is what usage holds beyond anon and file.
func TestOOMMemoryKernelFallbacks(t *testing.T) {
	old := OOMMemoryOf(map[string]int64{"anon": 100, "slab_unreclaimable": 7, "kernel_stack": 2, "pagetables": 3, "sock": 1}, 200, nil)
	if old.KernelBytes != 13 || old.KernelEstimated || old.DistanceBytes != nil {
		t.Errorf("5.x: kernel %d estimated %v distance %v, want 13, false, nil", old.KernelBytes, old.KernelEstimated, old.DistanceBytes)
	}
	v1 := OOMMemoryOf(map[string]int64{"anon": 100, "file": 50}, 170, nil)
	if v1.KernelBytes != 20 || !v1.KernelEstimated || v1.UnreclaimableBytes != 120 {
		t.Errorf("v1: kernel %d estimated %v unreclaimable %d, want 20, true, 120", v1.KernelBytes, v1.KernelEstimated, v1.UnreclaimableBytes)
	}
	if !strings.Contains(v1.Why(), "estimated") {
		t.Errorf("v1 Why() does not say the kernel part is estimated: %q", v1.Why())
	}
}

// The split read from memdoctor's own series, memory.high lower than max.
func TestOOMMemoryFrom(t *testing.T) {
	s := &sample.Snapshot{}
	cg := "/pod/app"
	s.Add("memdoctor_cgroup_memory_usage_bytes", 1000, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_limit_bytes", 2000, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_high_bytes", 1500, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_anon_bytes", 400, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_file_bytes", 500, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_shmem_bytes", 50, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_stat", 60, "cgroup", cg, "stat", "kernel")
	s.Add("memdoctor_cgroup_memory_stat", 300, "cgroup", cg, "stat", "inactive_file")
	m, ok := OOMMemoryFrom(s, cg)
	if !ok || m.UnreclaimableBytes != 510 || *m.LimitBytes != 1500 || *m.DistanceBytes != 990 || m.WorkingSetBytes != 700 {
		t.Errorf("got ok=%v %+v, want unreclaimable 510, limit 1500 (high), distance 990, working set 700", ok, m)
	}
	if _, ok := OOMMemoryFrom(s, "/other"); ok {
		t.Error("a cgroup the scrape does not hold was read")
	}
}
