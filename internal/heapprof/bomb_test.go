package heapprof

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/elfsym/elfsymtest"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// TestSymbolizerBomb: a mapped library whose .symtab has 1,500 entries
// naming one 1 MiB string (debug/elf expands it to 1.5 GB) leaves its
// frames unnamed, costs a few MiB and returns at once; a library with the
// same table and short names is named.
func TestSymbolizerBomb(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name     string
		nameSize int
		named    bool
	}{{"bomb.so", 1 << 20, false}, {"fine.so", 100, true}} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, elfsymtest.Bomb(1500, c.nameSize), 0o644); err != nil {
			t.Fatal(err)
		}
		sym := NewSymbolizer(func(m procfs.Mapping) (*os.File, error) { return os.Open(m.Path) })
		maps := []procfs.Mapping{{Start: 0x10000, End: 0x20000, Perms: "r-xp", Path: p}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		sym.object(maps[0])
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		o := sym.object(maps[0])
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("%s: reading its symbols allocated %d MiB", c.name, alloc>>20)
		}
		if took > 2*time.Second {
			t.Errorf("%s: read in %v", c.name, took)
		}
		if (len(o.syms) == 1500) != c.named {
			t.Errorf("%s: %d functions (%v)", c.name, len(o.syms), o.err)
		}
		t.Logf("%s: %d functions in %v, %v", c.name, len(o.syms), took, o.err)
	}
	// A cancelled symbolizer reads nothing more.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sym := NewSymbolizer(func(m procfs.Mapping) (*os.File, error) { return os.Open(m.Path) })
	sym.SetContext(ctx)
	if o := sym.object(procfs.Mapping{Path: filepath.Join(dir, "fine.so")}); o.err == nil || len(o.syms) != 0 {
		t.Errorf("cancelled: %d functions, %v", len(o.syms), o.err)
	}
}
