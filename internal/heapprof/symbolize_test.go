package heapprof

import (
	"os"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// A position-independent C program (loaded at a random base) prints the
// address of one of its functions; the symbolizer names it from the
// program's symbol table through the process' mappings (the load bias
// applied). An address in no file mapping, and a file that cannot be
// opened, give no name and no error.
func TestSymbolizePIE(t *testing.T) {
	bin, pid, addrs := startPIE(t, "marker", `#include <stdio.h>
__attribute__((noinline)) void marker_function(void) { puts("x"); }
int main(void) { printf("%p\n", (void *)marker_function); fflush(stdout); getchar(); return 0; }
`)
	if len(addrs) != 1 {
		t.Fatalf("program said %#x", addrs)
	}
	addr := addrs[0]
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	sym := NewSymbolizer(func(m procfs.Mapping) (*os.File, error) { return os.Open(m.Path) })
	pc := addr + 5 // a return address inside it
	f := sym.Frame(maps, pc)
	if f.Function != "marker_function" || f.Object != bin {
		t.Errorf("Frame(%#x) = %+v, want marker_function in %s", pc, f, bin)
	}
	if addr < 0x10000000 {
		t.Errorf("%#x: not loaded at a random base (not a PIE?)", addr)
	}
	if f := sym.Frame(maps, 8); f.Function != "" || f.Mapping != nil || f.Name() != "0x8" {
		t.Errorf("an unmapped address: %+v", f)
	}
	none := NewSymbolizer(func(procfs.Mapping) (*os.File, error) { return nil, os.ErrNotExist })
	if f := none.Frame(maps, pc); f.Function != "" || f.Mapping == nil || !strings.HasPrefix(f.Name(), "marker+0x") {
		t.Errorf("an unreadable file: %+v (%s)", f, f.Name())
	}
}
