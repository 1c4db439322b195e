package model

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

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

// The split read from memdoctor's own series; memory.high, though lower
// than memory.max, is not the limit: over it the kernel throttles (the
// lab's throttled.service held 47.8 MiB of anon over a 32 MiB memory.high,
// unkilled).
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
	if !ok || m.UnreclaimableBytes != 510 || *m.LimitBytes != 2000 || *m.DistanceBytes != 1490 || m.WorkingSetBytes != 700 {
		t.Errorf("got ok=%v %+v, want unreclaimable 510, limit 2000 (max, not high), distance 1490, working set 700", ok, m)
	}
	if _, ok := OOMMemoryFrom(s, "/other"); ok {
		t.Error("a cgroup the scrape does not hold was read")
	}
}

// A cgroup that may swap: reclaim can move anon out to swap up to the
// room its swap limit and the host's free swap leave, so the distance
// counts that room (and no more than the anon and shmem there are).
func TestOOMMemorySwapRoom(t *testing.T) {
	s := &sample.Snapshot{}
	cg := "/swapper"
	s.Add("node_memory_SwapFree_bytes", 1000)
	s.Add("memdoctor_cgroup_memory_usage_bytes", 900, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_limit_bytes", 1000, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_anon_bytes", 800, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_file_bytes", 100, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_swap_bytes", 100, "cgroup", cg)
	s.Add("memdoctor_cgroup_memory_swap_limit_bytes", 400, "cgroup", cg)
	m, _ := OOMMemoryFrom(s, cg)
	if m.SwapRoomBytes != 300 || *m.DistanceBytes != 1000-800+300 {
		t.Errorf("swap room %d distance %d, want 300 (limit 400 less 100 swapped) and 500", m.SwapRoomBytes, *m.DistanceBytes)
	}
	if !strings.Contains(m.Why(), "may still swap out") {
		t.Errorf("Why() does not count the swap: %q", m.Why())
	}
	s2 := &sample.Snapshot{}
	for _, x := range s.Metrics {
		if x.Name != "node_memory_SwapFree_bytes" {
			s2.AddMetric(x)
		}
	}
	s2.Add("node_memory_SwapFree_bytes", 0)
	if m, _ := OOMMemoryFrom(s2, cg); m.SwapRoomBytes != 0 || *m.DistanceBytes != 200 {
		t.Errorf("no free swap: room %d distance %d, want 0 and 200", m.SwapRoomBytes, *m.DistanceBytes)
	}
}

// The unreclaimable part over a time range, computed from the parts at
// each time, its growth and the time it takes to use the distance; page
// cache growing beside it does not count, and a flat one has no growth.
func TestUnreclaimableGrowth(t *testing.T) {
	const cg = "/leaky"
	w := &sample.Window{From: time.Unix(0, 0), To: time.Unix(3600, 0)}
	series := func(name string, f func(i int) float64, lv ...string) {
		s := &sample.Series{Name: name, Labels: sample.Labels{{Name: "cgroup", Value: cg}}}
		for i := 0; i < len(lv); i += 2 {
			s.Labels = append(s.Labels, sample.Label{Name: lv[i], Value: lv[i+1]})
		}
		for i := 0; i <= 60; i++ {
			s.Points = append(s.Points, sample.Point{T: int64(i) * 60000, V: f(i)})
		}
		w.Add(s)
	}
	series("memdoctor_cgroup_memory_anon_bytes", func(i int) float64 { return 1e8 + float64(i)*1e6 }) // 1 MB a minute
	series("memdoctor_cgroup_memory_file_bytes", func(i int) float64 { return float64(i) * 5e6 })
	series("memdoctor_cgroup_memory_shmem_bytes", func(int) float64 { return 0 })
	series("memdoctor_cgroup_memory_usage_bytes", func(i int) float64 { return 1e8 + float64(i)*6e6 + 1e6 })
	series("memdoctor_cgroup_memory_stat", func(int) float64 { return 1e6 }, "stat", "kernel")
	ps := UnreclaimableSeries(w, cg)
	if len(ps) != 61 || ps[0].V != 1e8+1e6 || ps[60].V != 1e8+60e6+1e6 {
		t.Fatalf("series %d points, first %v last %v: want 61, anon + kernel", len(ps), ps[0], ps[len(ps)-1])
	}
	g, ok := UnreclaimableGrowth(w, cg)
	if !ok || g < 16666 || g > 16667 {
		t.Fatalf("growth %v %v, want 1e6/60 a second", g, ok)
	}
	limit := int64(2e8)
	m := OOMMemoryOf(map[string]int64{"anon": 1.6e8, "kernel": 1e6}, 1.61e8, &limit)
	m.SetGrowth(g)
	if m.ETASeconds == nil || *m.ETASeconds < 2333 || *m.ETASeconds > 2343 {
		t.Errorf("eta %v, want 39e6 bytes at 1e6 a minute: about 2,340 s", m.ETASeconds)
	}
	if _, ok := UnreclaimableGrowth(w, "/other"); ok {
		t.Error("growth of a cgroup the range does not hold")
	}
	flat := &sample.Window{From: w.From, To: w.To}
	for _, s := range w.Series {
		if s.Name != "memdoctor_cgroup_memory_anon_bytes" {
			flat.Add(s)
		}
	}
	a := &sample.Series{Name: "memdoctor_cgroup_memory_anon_bytes", Labels: sample.Labels{{Name: "cgroup", Value: cg}}}
	for i := 0; i <= 60; i++ {
		a.Points = append(a.Points, sample.Point{T: int64(i) * 60000, V: 1e8 + float64(i%2)})
	}
	flat.Add(a)
	if g, ok := UnreclaimableGrowth(flat, cg); ok {
		t.Errorf("flat anon beside growing page cache: growth %v", g)
	}
}

// OOMRates gives a container of the report (a cgroup with a limit) its
// growth and the time to the OOM kill from a time range; a plain cgroup
// without a limit or an owner, not listed as a container, gets neither.
func TestOOMRates(t *testing.T) {
	w := &sample.Window{From: time.Unix(0, 0), To: time.Unix(3600, 0)}
	s := &sample.Snapshot{Time: time.Unix(3600, 0)}
	for _, cg := range []string{"/limited", "/free"} {
		add := func(name string, f func(i int) float64) {
			sr := &sample.Series{Name: name, Labels: sample.Labels{{Name: "cgroup", Value: cg}}}
			for i := 0; i <= 60; i++ {
				sr.Points = append(sr.Points, sample.Point{T: int64(i) * 60000, V: f(i)})
			}
			w.Add(sr)
			s.Add(name, f(60), "cgroup", cg)
		}
		add("memdoctor_cgroup_memory_usage_bytes", func(i int) float64 { return 1e8 + float64(i)*1e6 })
		add("memdoctor_cgroup_memory_anon_bytes", func(i int) float64 { return 1e8 + float64(i)*1e6 })
		add("memdoctor_cgroup_memory_working_set_bytes", func(i int) float64 { return 1e8 + float64(i)*1e6 })
	}
	s.Add("memdoctor_cgroup_memory_limit_bytes", 2.2e8, "cgroup", "/limited")
	h := Analyze(s, "test")
	OOMRates(h, w)
	for _, u := range h.Cgroups.Top {
		if u.OOM == nil {
			t.Fatalf("%s: no OOM-relevant memory", u.Cgroup)
		}
		switch u.Cgroup {
		case "/limited":
			// 60 MB left at 1 MB a minute
			if u.OOM.GrowthBytesPerSecond == nil || u.OOM.ETASeconds == nil || *u.OOM.ETASeconds < 3590 || *u.OOM.ETASeconds > 3610 {
				t.Errorf("/limited: growth %v eta %v, want 1e6/60 a second and 3,600 s", u.OOM.GrowthBytesPerSecond, u.OOM.ETASeconds)
			}
		case "/free":
			if u.OOM.GrowthBytesPerSecond != nil || u.OOM.ETASeconds != nil {
				t.Errorf("/free is no container, yet growth %v eta %v", u.OOM.GrowthBytesPerSecond, u.OOM.ETASeconds)
			}
		}
	}
}

// The charge of dying descendants comes with the split where the
// collector measured it (v2), with how many there are; check --cgroup on
// v1 says it is not measured.
func TestOOMMemoryDyingCharge(t *testing.T) {
	snap := func(mode string, dying bool) *sample.Snapshot {
		s := &sample.Snapshot{}
		s.Add("memdoctor_cgroup_info", 1, "mode", mode, "memory", mode)
		s.Add("memdoctor_cgroup_memory_usage_bytes", 34578432, "cgroup", "/jobs")
		s.Add("memdoctor_cgroup_memory_anon_bytes", 0, "cgroup", "/jobs")
		s.Add("memdoctor_cgroup_memory_file_bytes", 31490048, "cgroup", "/jobs")
		if dying {
			s.Add("memdoctor_cgroup_memory_dying_charge_bytes", 34578432, "cgroup", "/jobs")
			s.Add("memdoctor_cgroup_dying_descendants", 121, "cgroup", "/jobs")
		}
		return s
	}
	d, ok := CgroupDetailOf(snap("v2", true), "/jobs")
	if !ok || d.OOM == nil || d.OOM.DyingBytes == nil || *d.OOM.DyingBytes != 34578432 || d.OOM.DyingDescendants == nil || *d.OOM.DyingDescendants != 121 {
		t.Fatalf("v2: detail %+v: want 34578432 bytes held by 121 dying descendants", d.OOM)
	}
	if d.OOM.DyingNotMeasured != "" {
		t.Errorf("v2 says not measured: %q", d.OOM.DyingNotMeasured)
	}
	d, _ = CgroupDetailOf(snap("v1", false), "/jobs")
	if d.OOM == nil || d.OOM.DyingBytes != nil || !strings.Contains(d.OOM.DyingNotMeasured, "v1") {
		t.Errorf("v1: detail %+v: want no dying charge and a reason", d.OOM)
	}
}

// A cgroup whose anon memory wanders with its load (AR(1), φ = 0.97 a
// 30-second sample, about 50 MiB) over the 6 hours OOMGrowth reads on a
// time range is rarely said to grow; the same wander plus a steady rise of
// 100 MiB an hour always is.
func TestOOMGrowthWanderIsNotGrowth(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 3))
	const runs, n = 200, 720
	wander := func(rise float64) []sample.Point {
		ps := make([]sample.Point, n)
		var ar float64
		for i := range ps {
			ar = 0.97*ar + 12e6*r.NormFloat64()
			ps[i] = sample.Point{T: int64(i) * 30000, V: 2e9 + ar + rise*float64(i)/120}
		}
		return ps
	}
	var grew, missed int
	for range runs {
		if _, ok := OOMGrowth(wander(0)); ok {
			grew++
		}
		if _, ok := OOMGrowth(wander(100 << 20)); !ok {
			missed++
		}
	}
	t.Logf("wander alone called growth in %d of %d runs; the rise missed in %d", grew, runs, missed)
	if grew > runs/20 {
		t.Errorf("wander alone called growth in %d of %d runs, want at most 5 %%", grew, runs)
	}
	if missed > 0 {
		t.Errorf("a rise of 100 MiB an hour through the wander missed in %d of %d runs", missed, runs)
	}
}
