package procfs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// zoneHeader is the comparable part of a Zone.
type zoneHeader struct {
	Node                           int
	Name                           string
	Free, Boost, Min, Low, High    int64
	Promo, Spanned, Present, Mngd  int64
	CMA                            int64
	Protection                     []int64
	Stats, NodeStats, PageSets     int
	FirstStat, LastStat, FirstNode string
}

func headerOf(z Zone) zoneHeader {
	h := zoneHeader{Node: z.Node, Name: z.Name, Free: z.Free, Boost: z.Boost, Min: z.Min, Low: z.Low, High: z.High,
		Promo: z.Promo, Spanned: z.Spanned, Present: z.Present, Mngd: z.Managed, CMA: z.CMA, Protection: z.Protection,
		Stats: len(z.Stats.Keys), NodeStats: len(z.NodeStats.Keys), PageSets: len(z.PageSets)}
	if n := len(z.Stats.Keys); n > 0 {
		h.FirstStat, h.LastStat = z.Stats.Keys[0], z.Stats.Keys[n-1]
	}
	if len(z.NodeStats.Keys) > 0 {
		h.FirstNode = z.NodeStats.Keys[0]
	}
	return h
}

func TestZoneinfoRefsnap(t *testing.T) {
	t.Parallel()
	zones, err := refFS().Zoneinfo()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]zoneHeader, len(zones))
	for i, z := range zones {
		got[i] = headerOf(z)
	}
	p := []int64{0, 0, 0, 0, 0}
	want := []zoneHeader{
		{Name: "DMA", Free: 3840, Boost: 0, Min: 42, Low: 52, High: 62, Promo: 72, Spanned: 4095, Present: 3998, Mngd: 3840, CMA: 0,
			Protection: []int64{0, 3019, 5963, 5963, 5963}, Stats: 19, NodeStats: 51, PageSets: 2,
			FirstStat: "nr_free_pages", LastStat: "start_pfn", FirstNode: "nr_inactive_anon"},
		{Name: "DMA32", Free: 772917, Boost: 0, Min: 8533, Low: 10666, High: 12799, Promo: 14932, Spanned: 1044480, Present: 782336,
			Mngd: 772917, CMA: 0, Protection: []int64{0, 0, 2944, 2944, 2944}, Stats: 19, PageSets: 2,
			FirstStat: "nr_free_pages", LastStat: "start_pfn"},
		{Name: "Normal", Min: 8320, Low: 10400, High: 12480, Promo: 14560, Spanned: 5505024, Present: 5505024, Mngd: 753664,
			Protection: p, Stats: 19, PageSets: 2, FirstStat: "nr_free_pages", LastStat: "start_pfn"},
		{Name: "Movable", Min: 32, Low: 32, High: 32, Promo: 32, Protection: p},
		{Name: "Device", Protection: p},
	}
	// Normal's free pages are whatever the snapshot says; take it from the file.
	if len(zones) == 5 {
		want[2].Free = zones[2].Free
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("zones mismatch (-got +want):\n%s", diff)
	}
}

func TestZoneinfoHost(t *testing.T) {
	t.Parallel()
	zones, err := hostFS().Zoneinfo()
	if err != nil {
		t.Fatal(err)
	}
	if len(zones) != 5 {
		t.Fatalf("%d zones, want 5", len(zones))
	}
	for _, z := range zones[1:] {
		if len(z.NodeStats.Keys) != 0 {
			t.Errorf("zone %s has node stats; only the first populated zone carries them", z.Name)
		}
	}
	if n, last := len(zones[0].NodeStats.Keys), zones[0].NodeStats.Keys[len(zones[0].NodeStats.Keys)-1]; n != 51 || last != "nr_kernel_file_pages" {
		t.Errorf("DMA node stats: %d keys ending %q, want 51 ending nr_kernel_file_pages", n, last)
	}
	if v := zones[0].NodeStats.Value("nr_vmscan_immediate_reclaim"); v != 15184 {
		t.Errorf("nr_vmscan_immediate_reclaim = %d, want 15184", v)
	}
	normal := zones[2]
	normal.NodeStats = KV{}
	want := Zone{
		Node: 0, Name: "Normal", Free: 581045, Boost: 0, Min: 7936, Low: 9920, High: 11904, Promo: 13888,
		Spanned: 5505024, Present: 5505024, Managed: 688128, CMA: 0, Protection: []int64{0, 0, 0, 0, 0},
		Stats: KV{
			Keys: []string{"nr_free_pages", "nr_free_pages_blocks", "nr_zone_inactive_anon", "nr_zone_active_anon",
				"nr_zone_inactive_file", "nr_zone_active_file", "nr_zone_unevictable", "nr_zone_write_pending", "nr_mlock",
				"nr_zspages", "nr_free_cma", "numa_hit", "numa_miss", "numa_foreign", "numa_interleave", "numa_local",
				"numa_other", "node_unreclaimable", "start_pfn"},
			Num: map[string]int64{"nr_free_pages": 581045, "nr_free_pages_blocks": 434688, "nr_zone_inactive_anon": 2807,
				"nr_zone_active_anon": 383, "nr_zone_inactive_file": 12474, "nr_zone_active_file": 32576,
				"nr_zone_unevictable": 3130, "nr_zone_write_pending": 83, "nr_mlock": 2892, "nr_zspages": 0, "nr_free_cma": 0,
				"numa_hit": 3266229, "numa_miss": 0, "numa_foreign": 0, "numa_interleave": 1120, "numa_local": 3266229,
				"numa_other": 0, "node_unreclaimable": 0, "start_pfn": 1048576},
		},
		PageSets: []PageSet{
			{CPU: 0, Count: 3971, High: 4960, Batch: 63, HighMin: 4960, HighMax: 43008, VMStatsThreshold: 24},
			{CPU: 1, Count: 3508, High: 4960, Batch: 63, HighMin: 4960, HighMax: 43008, VMStatsThreshold: 24},
		},
	}
	if diff := cmp.Diff(normal, want, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Normal zone mismatch (-got +want):\n%s", diff)
	}
}

// Older kernels, reconstructed from zoneinfo_show_print of the version
// named (values invented, layout not).
const (
	// 4.19: per-node stats, no boost/promo/cma, no high_min/high_max, the
	// old "count: 0" alignment.
	zoneinfo419 = `Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 4
      nr_active_anon 5
  pages free     3977
        min      16
        low      20
        high     24
        spanned  4095
        present  3998
        managed  3977
        protection: (0, 2991, 15911, 15911, 15911)
      nr_free_pages 3977
      numa_hit     1
  pagesets
    cpu: 0
              count: 0
              high:  0
              batch: 1
  vm stats threshold: 8
  node_unreclaimable:  0
  start_pfn:           1
Node 0, zone  Movable
  pages free     0
        min      0
        low      0
        high     0
        spanned  0
        present  0
        managed  0
        protection: (0, 0, 0, 0, 0)
`
	// 3.10 (RHEL 7): no per-node stats, "scanned", zone counters *before*
	// protection, and all_unreclaimable/inactive_ratio after the pagesets.
	zoneinfo310 = `Node 0, zone      DMA
  pages free     3975
        min      5
        low      6
        high     7
        scanned  0
        spanned  4095
        present  3996
        managed  3975
    nr_free_pages 3975
    nr_alloc_batch 1
        protection: (0, 2815, 3762, 3762)
  pagesets
    cpu: 0
              count: 0
              high:  0
              batch: 1
  vm stats threshold: 6
  all_unreclaimable: 1
  start_pfn:         1
  inactive_ratio:    1
`
	// Two NUMA nodes: node 1's first populated zone carries its node stats.
	zoneinfoNUMA = `Node 0, zone   Normal
  per-node stats
      nr_inactive_anon 10
  pages free     100
        boost    0
        min      1
        low      2
        high     3
        promo    4
        spanned  200
        present  200
        managed  150
        cma      0
        protection: (0, 0)
      nr_free_pages 100
  pagesets
    cpu: 0
              count:    7
              high:     8
              batch:    9
              high_min: 10
              high_max: 11
  vm stats threshold: 12
  node_unreclaimable:  0
  start_pfn:           4096
Node 1, zone   Normal
  per-node stats
      nr_inactive_anon 20
  pages free     300
        boost    5
        min      6
        low      7
        high     8
        promo    9
        spanned  400
        present  400
        managed  350
        cma      1
        protection: (0, 0)
      nr_free_pages 300
  pagesets
    cpu: 1
              count:    1
              high:     2
              batch:    3
              high_min: 4
              high_max: 5
  vm stats threshold: 6
  node_unreclaimable:  1
  start_pfn:           8192
`
)

func TestParseZoneinfoShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Zone
	}{
		{"4.19", zoneinfo419, []Zone{
			{Name: "DMA", Free: 3977, Boost: -1, Min: 16, Low: 20, High: 24, Promo: -1, Spanned: 4095, Present: 3998, Managed: 3977, CMA: -1,
				Protection: []int64{0, 2991, 15911, 15911, 15911},
				Stats: KV{Keys: []string{"nr_free_pages", "numa_hit", "node_unreclaimable", "start_pfn"},
					Num: map[string]int64{"nr_free_pages": 3977, "numa_hit": 1, "node_unreclaimable": 0, "start_pfn": 1}},
				NodeStats: KV{Keys: []string{"nr_inactive_anon", "nr_active_anon"}, Num: map[string]int64{"nr_inactive_anon": 4, "nr_active_anon": 5}},
				PageSets:  []PageSet{{CPU: 0, Count: 0, High: 0, Batch: 1, HighMin: -1, HighMax: -1, VMStatsThreshold: 8}}},
			{Name: "Movable", Boost: -1, Promo: -1, CMA: -1, Protection: []int64{0, 0, 0, 0, 0}},
		}},
		{"3.10", zoneinfo310, []Zone{
			{Name: "DMA", Free: 3975, Boost: -1, Min: 5, Low: 6, High: 7, Promo: -1, Spanned: 4095, Present: 3996, Managed: 3975, CMA: -1,
				Protection: []int64{0, 2815, 3762, 3762},
				Stats: KV{Keys: []string{"scanned", "nr_free_pages", "nr_alloc_batch", "all_unreclaimable", "start_pfn", "inactive_ratio"},
					Num: map[string]int64{"scanned": 0, "nr_free_pages": 3975, "nr_alloc_batch": 1, "all_unreclaimable": 1, "start_pfn": 1, "inactive_ratio": 1}},
				PageSets: []PageSet{{CPU: 0, Count: 0, High: 0, Batch: 1, HighMin: -1, HighMax: -1, VMStatsThreshold: 6}}},
		}},
		{"NUMA", zoneinfoNUMA, []Zone{
			{Node: 0, Name: "Normal", Free: 100, Boost: 0, Min: 1, Low: 2, High: 3, Promo: 4, Spanned: 200, Present: 200, Managed: 150, CMA: 0,
				Protection: []int64{0, 0},
				Stats: KV{Keys: []string{"nr_free_pages", "node_unreclaimable", "start_pfn"},
					Num: map[string]int64{"nr_free_pages": 100, "node_unreclaimable": 0, "start_pfn": 4096}},
				NodeStats: KV{Keys: []string{"nr_inactive_anon"}, Num: map[string]int64{"nr_inactive_anon": 10}},
				PageSets:  []PageSet{{CPU: 0, Count: 7, High: 8, Batch: 9, HighMin: 10, HighMax: 11, VMStatsThreshold: 12}}},
			{Node: 1, Name: "Normal", Free: 300, Boost: 5, Min: 6, Low: 7, High: 8, Promo: 9, Spanned: 400, Present: 400, Managed: 350, CMA: 1,
				Protection: []int64{0, 0},
				Stats: KV{Keys: []string{"nr_free_pages", "node_unreclaimable", "start_pfn"},
					Num: map[string]int64{"nr_free_pages": 300, "node_unreclaimable": 1, "start_pfn": 8192}},
				NodeStats: KV{Keys: []string{"nr_inactive_anon"}, Num: map[string]int64{"nr_inactive_anon": 20}},
				PageSets:  []PageSet{{CPU: 1, Count: 1, High: 2, Batch: 3, HighMin: 4, HighMax: 5, VMStatsThreshold: 6}}},
		}},
		{"2.6 hot/cold pagesets and an unknown cpu-block key", `Node 0, zone      DMA
  pages free     1
        min      1
        low      1
        high     1
        spanned  1
        present  1
        managed  1
        protection: (0)
  pagesets
    cpu: 0 pcp: 1
              count: 2
              high:  3
              batch: 4
              future: 5
  vm stats threshold: 6
  start_pfn: 7
`, []Zone{
			{Name: "DMA", Free: 1, Boost: -1, Min: 1, Low: 1, High: 1, Promo: -1, Spanned: 1, Present: 1, Managed: 1, CMA: -1,
				Protection: []int64{0},
				Stats:      KV{Keys: []string{"start_pfn"}, Num: map[string]int64{"start_pfn": 7}},
				PageSets: []PageSet{{CPU: 0, Count: 2, High: 3, Batch: 4, HighMin: -1, HighMax: -1, VMStatsThreshold: 6,
					Extra: KV{Keys: []string{"pcp", "future"}, Num: map[string]int64{"pcp": 1, "future": 5}}}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseZoneinfo([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseZoneinfo mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseZoneinfoErrors(t *testing.T) {
	t.Parallel()
	head := "Node 0, zone      DMA\n  pages free     1\n        min      1\n        low      1\n        high     1\n" +
		"        spanned  1\n        present  1\n"
	full := head + "        managed  1\n        protection: (0, 1)\n"
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"empty", "", 0},
		{"data before Node", "  pages free 1\n" + full, 1},
		{"no comma", "Node 0 zone DMA\n", 1},
		{"bad node", "Node x, zone DMA\n", 1},
		{"negative node", "Node -1, zone DMA\n", 1},
		{"no zone name", "Node 0, zone\n", 1},
		{"truncated before managed (pre-3.8 shape too)", head + "        protection: (0, 1)\n", 1},
		{"second zone truncated", full + "Node 0, zone DMA32\n  pages free 5\n", 10},
		{"no protection", head + "        managed  1\n", 1},
		{"not a number", full + "      nr_free_pages lots\n", 10},
		{"negative managed", head + "        managed  -1\n", 8},
		{"bad protection", head + "        managed  1\n        protection: (0, x)\n", 9},
		{"protection without parens", head + "        managed  1\n        protection: 0, 1\n", 9},
		{"bad pages free", "Node 0, zone DMA\n  pages free     \n", 2},
		{"threshold outside cpu block", full + "  pagesets\n  vm stats threshold: 4\n", 11},
		{"cpu block without batch", full + "  pagesets\n    cpu: 0\n      count: 1\n      high: 2\n  start_pfn: 1\n", 11},
		{"bad cpu", full + "  pagesets\n    cpu: x\n", 11},
		{"bad pcp", full + "  pagesets\n    cpu: 0 pcp\n", 11},
		{"key without value", full + "      nr_free_pages\n", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseZoneinfo([]byte(tt.in))
			wantParseError(t, err, "proc/zoneinfo", tt.line)
		})
	}
}

func FuzzParseZoneinfo(f *testing.F) {
	addHostile(f, "proc/zoneinfo")
	f.Add(readTestdata(f, "host/proc/zoneinfo"))
	f.Add(readTestdata(f, "refsnap/proc/zoneinfo"))
	for _, s := range []string{zoneinfo419, zoneinfo310, zoneinfoNUMA} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		zones, err := ParseZoneinfo(data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if len(zones) == 0 {
			t.Fatal("no zones and no error")
		}
		for _, z := range zones {
			if z.Managed < 0 || z.Free < 0 || z.Min < 0 || z.Low < 0 || z.High < 0 || z.Spanned < 0 || z.Present < 0 ||
				z.Boost < -1 || z.Promo < -1 || z.CMA < -1 || len(z.Protection) == 0 || z.Name == "" || z.Node < 0 {
				t.Fatalf("impossible zone %+v", z)
			}
			checkKV(t, z.Stats)
			checkKV(t, z.NodeStats)
			for _, ps := range z.PageSets {
				checkKV(t, ps.Extra)
				if ps.CPU < 0 {
					t.Fatalf("negative cpu %d", ps.CPU)
				}
			}
		}
		again, _ := ParseZoneinfo(data)
		if diff := cmp.Diff(zones, again); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
		if strings.Count(string(data), "Node ") < len(zones) {
			t.Fatalf("%d zones from fewer Node lines", len(zones))
		}
	})
}

func BenchmarkParseZoneinfo(b *testing.B) {
	data := readTestdata(b, "host/proc/zoneinfo")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseZoneinfo(data); err != nil {
			b.Fatal(err)
		}
	}
}
