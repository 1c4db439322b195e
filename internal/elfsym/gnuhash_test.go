package elfsym

import (
	"context"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// hostLibraries lists shared objects of this host: the C library's
// directory, at most limit of them.
func hostLibraries(t *testing.T, limit int) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{filepath.Dir(libcPath(t)), "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.so*"))
		for _, p := range m {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && len(out) < limit {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestExportedByHashFindsWhatTheEntriesSay: on this host's libraries, the
// lookup through the GNU hash table returns, for every exported function
// name and for names no library has, what reading every entry returns.
func TestExportedByHashFindsWhatTheEntriesSay(t *testing.T) {
	t.Parallel()
	hashed := 0
	for _, p := range hostLibraries(t, 60) {
		ef, err := elf.Open(p)
		if err != nil {
			continue // a linker script, not an object
		}
		all, err := Read(context.Background(), ef, elf.SHT_DYNSYM, Default, func(s *Symbol) bool { return s.Func() && !s.Hidden })
		if err != nil {
			_ = ef.Close()
			continue
		}
		// Some 200 exported names of each (the entry-by-entry lookup
		// compares every entry with each name asked).
		names := []string{"malloc", "free", "no_such_function_here", ""}
		for i, s := range all {
			if i%max(1, len(all)/200) == 0 {
				names = append(names, s.Name)
			}
		}
		want, err := exportedLinear(context.Background(), ef, Default, names)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got, ok, err := exportedByHash(context.Background(), ef, Default, names)
		if ok && err == nil {
			// One name at a time: an absent one may be told by the Bloom
			// filter alone, a present one never.
			for i, n := range names {
				if i%7 != 0 {
					continue
				}
				one, ok, err := exportedByHash(context.Background(), ef, Default, []string{n})
				if !ok || err != nil {
					t.Fatalf("%s: %s alone: ok %v, %v", p, n, ok, err)
				}
				if w, present := want[n]; present != (len(one) == 1) || present && one[n] != w {
					t.Errorf("%s: %s alone through the hash table: %v; entry by entry %+v (present %v)", p, n, one, w, present)
				}
			}
		}
		_ = ef.Close()
		if !ok {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		hashed++
		if len(got) != len(want) {
			t.Errorf("%s: %d names found through the hash table, %d entry by entry", p, len(got), len(want))
		}
		for n, w := range want {
			if g, ok := got[n]; !ok || g != w {
				t.Errorf("%s: %s through the hash table: %+v %v; entry by entry %+v", p, n, g, ok, w)
			}
		}
	}
	if hashed < 2 {
		t.Skipf("%d libraries with a GNU hash table here: too few to tell", hashed)
	}
	t.Logf("%d libraries compared", hashed)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.n.Add(int64(n))
	return n, err
}

// TestExportedReadsLessThanTheStringTable: looking up the allocator's few
// names in the C library reads its hash table and the entries named, not
// every entry and every name (the C++ runtime's string table alone is
// 300 KiB; check looks up each object a process maps).
func TestExportedReadsLessThanTheStringTable(t *testing.T) {
	t.Parallel()
	for _, p := range []string{libcPath(t), "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/aarch64-linux-gnu/libstdc++.so.6"} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		cr := &countingReader{r: f}
		ef, err := elf.NewFile(cr)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		dynstr := ef.Section(".dynstr")
		if dynstr == nil || ef.Section(".gnu.hash") == nil {
			_ = f.Close()
			t.Logf("%s: no .dynstr or no .gnu.hash", p)
			continue
		}
		before := cr.n.Load()
		got, err := Exported(context.Background(), ef, Default, "malloc", "free", "calloc", "realloc", "je_malloc_conf", "tc_malloc", "mi_malloc", "no_such_function_here")
		read := cr.n.Load() - before
		_ = f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		t.Logf("%s: %d names found, %d bytes read; .dynstr %d, .dynsym %d", p, len(got), read, dynstr.Size, ef.Section(".dynsym").Size)
		if read >= int64(dynstr.Size) {
			t.Errorf("%s: Exported read %d bytes, not less than the %d of the string table: it read every name", p, read, dynstr.Size)
		}
		if filepath.Base(p) == filepath.Base(libcPath(t)) {
			if _, ok := got["malloc"]; !ok {
				t.Errorf("%s: no malloc found", p)
			}
		}
	}
}
