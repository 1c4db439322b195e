package procfs

import (
	"errors"
	"strings"
	"testing"
)

// The format as lib/alloc_tag.c prints it ("%12lli %8llu " then the tag,
// then " \n"), version 1.0 with its header; a site in a module; version
// 2.0's accurate:no; a negative size (the counter is signed and per-CPU
// sums can dip); lines that are not sites are skipped.
const allocinfoV1 = `allocinfo - version: 1.0
#     <size>  <calls> <tag info>
           0        0 init/main.c:1314 func:do_initcalls 
     4194304     1024 fs/dcache.c:1660 func:__d_alloc 
      131072       32 fs/xfs/xfs_icache.c:80 [xfs] func:xfs_inode_alloc 
         -64        1 lib/percpu.c:12 func:odd 
garbage line
      12 34
`

func TestParseAllocinfo(t *testing.T) {
	t.Parallel()
	v, sites, err := ParseAllocinfo([]byte(allocinfoV1))
	if err != nil || v != "1.0" {
		t.Fatalf("version %q, %v", v, err)
	}
	want := []AllocSite{
		{Bytes: 0, Calls: 0, File: "init/main.c", Line: 1314, Func: "do_initcalls"},
		{Bytes: 4194304, Calls: 1024, File: "fs/dcache.c", Line: 1660, Func: "__d_alloc"},
		{Bytes: 131072, Calls: 32, File: "fs/xfs/xfs_icache.c", Line: 80, Module: "xfs", Func: "xfs_inode_alloc"},
		{Bytes: -64, Calls: 1, File: "lib/percpu.c", Line: 12, Func: "odd"},
	}
	if len(sites) != len(want) {
		t.Fatalf("sites %+v", sites)
	}
	for i := range want {
		if sites[i] != want[i] {
			t.Errorf("site %d: %+v, want %+v", i, sites[i], want[i])
		}
	}
	if got := sites[1].Site(); got != "fs/dcache.c:1660" {
		t.Errorf("Site() = %q", got)
	}

	v2 := "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n" +
		"        4096        1 arch/x86/kernel/alternative.c:127 func:__its_alloc accurate:no \n" +
		"        8192        2 mm/slub.c:2000 func:alloc_slab_obj_exts \n"
	v, sites, err = ParseAllocinfo([]byte(v2))
	if err != nil || v != "2.0" || len(sites) != 2 || !sites[0].Inaccurate || sites[1].Inaccurate || sites[0].Func != "__its_alloc" {
		t.Errorf("version 2.0: %q %v %+v", v, err, sites)
	}
	if _, _, err := ParseAllocinfo([]byte("allocinfo - version: 3.0\n 1 1 a.c:1 func:f\n")); !errors.Is(err, ErrAllocinfoVersion) {
		t.Errorf("version 3.0: %v", err)
	}
	// No version line (the 6.10 release candidates): read as 1.0.
	if v, sites, err := ParseAllocinfo([]byte("  10 1 a.c:1 func:f \n")); err != nil || v != "1.0" || len(sites) != 1 {
		t.Errorf("no header: %q %v %+v", v, err, sites)
	}
}

// FuzzParseAllocinfo: any input parses without panicking, and every site
// it returns has a file, a line, a function and no negative call count.
func FuzzParseAllocinfo(f *testing.F) {
	f.Add([]byte(allocinfoV1))
	f.Add([]byte("allocinfo - version: 2.0\n 1 1 a.c:1 [m] func:f accurate:no \n"))
	f.Add([]byte(" 1 1 :1 func:f\n 1 1 a.c: func:\n 1 -1 a.c:1 func:f\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, sites, err := ParseAllocinfo(b)
		if err != nil {
			return
		}
		for _, s := range sites {
			if s.File == "" || s.Line < 0 || s.Func == "" || s.Calls < 0 || strings.ContainsAny(s.Func, " \n") {
				t.Fatalf("bad site %+v from %q", s, b)
			}
		}
	})
}
