package elfsym

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/elfsym/elfsymtest"
)

// TestRealObjects: on the C library (.dynsym, with versions) and a copy
// of it given a .symtab, the symbols read are the ones debug/elf reads,
// name for name and address for address.
func TestRealObjects(t *testing.T) {
	t.Parallel()
	libc := libcPath(t)
	b, err := os.ReadFile(libc)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := elfsymtest.Patch(b, 500, 40)
	if err != nil {
		t.Fatal(err)
	}
	withSymtab := filepath.Join(t.TempDir(), "libc.so.6")
	if err := os.WriteFile(withSymtab, patched, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		typ  elf.SectionType
	}{{withSymtab, elf.SHT_SYMTAB}, {libc, elf.SHT_DYNSYM}} {
		ef, err := elf.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		var want []elf.Symbol
		if c.typ == elf.SHT_SYMTAB {
			want, err = ef.Symbols()
		} else {
			want, err = ef.DynamicSymbols()
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := Read(context.Background(), ef, c.typ, Default, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if len(got) != len(want) || len(got) < 500 {
			t.Fatalf("%s: %d symbols, debug/elf reads %d", c.path, len(got), len(want))
		}
		hidden := 0
		for i, w := range want {
			g := got[i]
			if g.Name != w.Name || g.Value != w.Value || g.Size != w.Size || g.Info != w.Info || g.Section != w.Section {
				t.Fatalf("%s: symbol %d = %+v, debug/elf: %+v", c.path, i, g, w)
			}
			if g.Hidden != (w.HasVersion && w.VersionIndex.IsHidden()) {
				t.Fatalf("%s: %s hidden %v, debug/elf: %+v", c.path, g.Name, g.Hidden, w)
			}
			if g.Hidden {
				hidden++
			}
		}
		if c.typ == elf.SHT_DYNSYM {
			if hidden == 0 {
				t.Errorf("%s: no symbol of an old version", c.path)
			}
			ex, err := Exported(context.Background(), ef, Default, "malloc", "free", "no_such_function")
			if err != nil || ex["malloc"].Value == 0 || ex["free"].Value == 0 || len(ex) != 2 {
				t.Errorf("Exported: %+v %v", ex, err)
			}
		}
		_ = ef.Close()
	}
}

func libcPath(t *testing.T) string {
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no libc.so.6 here")
	return ""
}

// TestBombs: tables whose entries all name one 1 MiB string (1,500 and
// 15,000 entries; debug/elf makes 1.5 and 15 GB of them) are refused
// within a second, allocating little more than the file; the same tables
// with a short name are read whole, their names sharing the table's bytes.
func TestBombs(t *testing.T) {
	for _, n := range []int{1500, 15000} {
		b := elfsymtest.Bomb(n, 1<<20)
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		syms, err := Functions(context.Background(), ef, Default)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrBound) || syms != nil {
			t.Errorf("%d entries: %d symbols, %v", n, len(syms), err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(b))+8<<20 {
			t.Errorf("%d entries: allocated %d MiB for a %d-byte file", n, alloc>>20, len(b))
		}
		if took > time.Second {
			t.Errorf("%d entries: refused in %v", n, took)
		}
		t.Logf("%d entries (%d bytes): %v in %v", n, len(b), err, took)

		small, err := elf.NewFile(bytes.NewReader(elfsymtest.Bomb(n, 1000)))
		if err != nil {
			t.Fatal(err)
		}
		syms, err = Functions(context.Background(), small, Default)
		if err != nil || len(syms) != n || len(syms[n-1].Name) != 1000 {
			t.Fatalf("%d entries of 1000-byte names: %d symbols, %v", n, len(syms), err)
		}
	}
}

// TestBombUnderTheNameCap: 15,000 entries naming one string just under
// the cap on a name (60 KiB; 879 MiB of names) stop at the cap on all the
// names, without copying any.
func TestBombUnderTheNameCap(t *testing.T) {
	b := elfsymtest.Bomb(15000, 60<<10)
	ef, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = Functions(context.Background(), ef, Default)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrBound) || !strings.Contains(err.Error(), "names add up") {
		t.Errorf("%v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(b))+8<<20 {
		t.Errorf("allocated %d MiB for a %d-byte file", alloc>>20, len(b))
	}
	t.Logf("%d bytes: %v in %v", len(b), err, took)
}

// TestLimits: each bound is checked, the time and a cancelled context too.
func TestLimits(t *testing.T) {
	t.Parallel()
	ef, err := elf.NewFile(bytes.NewReader(elfsymtest.Bomb(3000, 100)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		lim  Limits
	}{
		{"symbols", Limits{MaxSymbols: 2000, MaxTable: 1 << 20, MaxName: 1000, MaxNames: 1 << 30, Budget: time.Minute}},
		{"table", Limits{MaxSymbols: 1 << 20, MaxTable: 64, MaxName: 1000, MaxNames: 1 << 30, Budget: time.Minute}},
		{"name", Limits{MaxSymbols: 1 << 20, MaxTable: 1 << 20, MaxName: 99, MaxNames: 1 << 30, Budget: time.Minute}},
		{"names", Limits{MaxSymbols: 1 << 20, MaxTable: 1 << 20, MaxName: 1000, MaxNames: 100 * 2999, Budget: time.Minute}},
		{"time", Limits{MaxSymbols: 1 << 20, MaxTable: 1 << 20, MaxName: 1000, MaxNames: 1 << 30, Budget: -time.Second}},
	} {
		if _, err := Functions(ctx, ef, c.lim); !errors.Is(err, ErrBound) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if syms, err := Functions(ctx, ef, Limits{MaxSymbols: 3001, MaxTable: 102, MaxName: 100, MaxNames: 100 * 3000, Budget: time.Minute}); err != nil || len(syms) != 3000 {
		t.Errorf("at the bounds: %d symbols, %v", len(syms), err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Functions(cctx, ef, Default); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
