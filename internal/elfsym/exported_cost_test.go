package elfsym

import (
	"context"
	"debug/elf"
	"os"
	"runtime"
	"testing"
	"unsafe"
)

// Looking up a few names in a real library's dynamic symbols allocates
// for what it finds, not a Symbol for each of the library's thousands of
// functions: the symbol lookup was a third of check's CPU, in measuring
// and keeping every name. Measured on this host's C++ runtime (some
// 5,000 exported functions with long mangled names) or its libc.
func TestExportedAllocatesForTheNamesAsked(t *testing.T) {
	var path string
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/aarch64-linux-gnu/libstdc++.so.6",
		"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no libstdc++ or libc here")
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ef.Close() }()
	all, err := Read(context.Background(), ef, elf.SHT_DYNSYM, Default, func(s *Symbol) bool { return s.Func() && !s.Hidden })
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 1000 {
		t.Skipf("%s exports %d functions: too few to tell", path, len(all))
	}
	names := []string{"malloc", "free", "operator_new_not_a_symbol", "je_malloc_conf"}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	got, err := Exported(context.Background(), ef, Default, names...)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		for _, n := range names {
			if s.Name == n {
				if g, ok := got[n]; !ok || g != s {
					t.Errorf("%s: Exported %s = %+v, %v; the table says %+v", path, n, g, ok, s)
				}
			}
		}
	}
	for n := range got {
		if n != "malloc" && n != "free" && n != "je_malloc_conf" && n != "operator_new_not_a_symbol" {
			t.Errorf("Exported returned %s, not asked for", n)
		}
	}
	// The string table and the version table are read whole, and the
	// entries a window at a time; a Symbol per function is not made.
	perFunction := int64(len(all)) * int64(unsafe.Sizeof(Symbol{}))
	alloc := int64(m1.TotalAlloc - m0.TotalAlloc)
	t.Logf("%s: %d exported functions; Exported of %d names allocated %d bytes (a Symbol each: %d)", path, len(all), len(names), alloc, perFunction)
	var tables int64
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_STRTAB && s.Name == ".dynstr" || s.Type == elf.SHT_GNU_VERSYM {
			tables += int64(s.Size)
		}
	}
	if limit := tables + 4096*24 + 64<<10; alloc > limit {
		t.Errorf("Exported allocated %d bytes, more than its tables (%d) and a window of entries: a Symbol per function", alloc, tables)
	}
}
