package procfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSlabinfoHost(t *testing.T) {
	t.Parallel()
	slabs, err := hostFS().Slabinfo()
	if err != nil {
		t.Fatal(err)
	}
	if len(slabs) != 235 {
		t.Errorf("%d caches, want 235", len(slabs))
	}
	byName := make(map[string]Slab, len(slabs))
	for _, s := range slabs {
		byName[s.Name] = s
	}
	got := []Slab{byName["ext4_inode_cache"], byName["task_struct"], slabs[0], slabs[len(slabs)-1]}
	want := []Slab{
		{Name: "ext4_inode_cache", ActiveObjs: 75638, NumObjs: 76062, ObjSize: 1128, ObjPerSlab: 14, PagesPerSlab: 4, ActiveSlabs: 5433, NumSlabs: 5433},
		{Name: "task_struct", ActiveObjs: 98, NumObjs: 115, ObjSize: 5888, ObjPerSlab: 5, PagesPerSlab: 8, ActiveSlabs: 23, NumSlabs: 23},
		{Name: "btrfs_delayed_node", ObjSize: 312, ObjPerSlab: 13, PagesPerSlab: 1},
		{Name: "kmem_cache", ActiveObjs: 240, NumObjs: 240, ObjSize: 256, ObjPerSlab: 16, PagesPerSlab: 1, ActiveSlabs: 15, NumSlabs: 15},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("caches mismatch (-got +want):\n%s", diff)
	}
	if b := byName["ext4_inode_cache"].Bytes(4096); b != 5433*4*4096 {
		t.Errorf("ext4_inode_cache Bytes = %d", b)
	}
}

func TestParseSlabinfoShapes(t *testing.T) {
	t.Parallel()
	const header = "slabinfo - version: 2.1\n# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n"
	tests := []struct {
		name string
		in   string
		want []Slab
	}{
		{"SLAB with tunables", header +
			"kmalloc-128         1855   2016    128   32    1 : tunables  120   60    8 : slabdata     63     63      0\n",
			[]Slab{{Name: "kmalloc-128", ActiveObjs: 1855, NumObjs: 2016, ObjSize: 128, ObjPerSlab: 32, PagesPerSlab: 1,
				Limit: 120, BatchCount: 60, SharedFactor: 8, ActiveSlabs: 63, NumSlabs: 63}}},
		{"name with a blank", header +
			"my cache     1      2     64   64    1 : tunables    0    0    0 : slabdata      1      1      0\n",
			[]Slab{{Name: "my cache", ActiveObjs: 1, NumObjs: 2, ObjSize: 64, ObjPerSlab: 64, PagesPerSlab: 1, ActiveSlabs: 1, NumSlabs: 1}}},
		{"CONFIG_DEBUG_SLAB statistics columns", "slabinfo - version: 2.1 (statistics)\n" +
			"# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail> : globalstat <listallocs> <maxobjs> <grown> <reaped> <error> <maxfreeable> <nodeallocs> <remotefrees> <alienoverflow> : cpustat <allochit> <allocmiss> <freehit> <freemiss>\n" +
			"dentry 10 20 192 21 1 : tunables 120 60 8 : slabdata 1 1 0 : globalstat 30 20 2 0 0 0 0 0 0 : cpustat 100 10 90 5\n",
			[]Slab{{Name: "dentry", ActiveObjs: 10, NumObjs: 20, ObjSize: 192, ObjPerSlab: 21, PagesPerSlab: 1,
				Limit: 120, BatchCount: 60, SharedFactor: 8, ActiveSlabs: 1, NumSlabs: 1,
				Extra: map[string]int64{"listallocs": 30, "maxobjs": 20, "grown": 2, "reaped": 0, "error": 0, "maxfreeable": 0,
					"nodeallocs": 0, "remotefrees": 0, "alienoverflow": 0, "allochit": 100, "allocmiss": 10, "freehit": 90, "freemiss": 5}}}},
		{"no column header: 2.1 layout", "slabinfo - version: 2.1\n" +
			"dentry 10 20 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\n",
			[]Slab{{Name: "dentry", ActiveObjs: 10, NumObjs: 20, ObjSize: 192, ObjPerSlab: 21, PagesPerSlab: 1, ActiveSlabs: 1, NumSlabs: 1}}},
		{"no caches", header, []Slab{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSlabinfo([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ParseSlabinfo mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseSlabinfoErrors(t *testing.T) {
	t.Parallel()
	const header = "slabinfo - version: 2.1\n# name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n"
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"empty", "", 1},
		{"no version line", "dentry 1 1 1 1 1 : tunables 0 0 0 : slabdata 0 0 0\n", 1},
		{"version 1.1", "slabinfo - version: 1.1\nkmem_cache 58 58 100 1 1 1\n", 1},
		{"version 3.0", "slabinfo - version: 3.0\n", 1},
		{"truncated line", header + "dentry 10 20 192 21 1 : tunables 0 0 0 : slabdata 1 1\n", 3},
		{"too many columns", header + "dentry 10 20 192 21 1 : tunables 0 0 0 : slabdata 1 1 0 7\n", 3},
		{"no name", header + "10 20 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\n", 3},
		{"not a number", header + "dentry 10 20 x 21 1 : tunables 0 0 0 : slabdata 1 1 0\n", 3},
		{"negative", header + "dentry 10 20 -1 21 1 : tunables 0 0 0 : slabdata 1 1 0\n", 3},
		{"garbage", header + "hello world\n", 3},
		{"bad header", "slabinfo - version: 2.1\n# what <a>\n", 2},
		{"header without columns", "slabinfo - version: 2.1\n# name : tunables\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSlabinfo([]byte(tt.in))
			wantParseError(t, err, "proc/slabinfo", tt.line)
		})
	}
}

func FuzzParseSlabinfo(f *testing.F) {
	addHostile(f, "proc/slabinfo")
	f.Add(readTestdata(f, "host/proc/slabinfo"))
	f.Add([]byte("slabinfo - version: 2.1\ndentry 10 20 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\n"))
	f.Add([]byte("slabinfo - version: 2.1 (statistics)\n# name <a> <b> : x <c> : y <d>\nz 1 2 : x 3 : y 4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		slabs, err := ParseSlabinfo(data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		for _, s := range slabs {
			if s.Name == "" || s.ActiveObjs < 0 || s.NumObjs < 0 || s.NumSlabs < 0 || s.PagesPerSlab < 0 {
				t.Fatalf("impossible cache %+v", s)
			}
		}
		again, _ := ParseSlabinfo(data)
		if diff := cmp.Diff(slabs, again); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
	})
}

func BenchmarkParseSlabinfo(b *testing.B) {
	data := readTestdata(b, "host/proc/slabinfo")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseSlabinfo(data); err != nil {
			b.Fatal(err)
		}
	}
}
