package heapprof

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "marker.c")
	prog := `#include <stdio.h>
__attribute__((noinline)) void marker_function(void) { puts("x"); }
int main(void) { printf("%p\n", (void *)marker_function); fflush(stdout); getchar(); return 0; }
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "marker")
	if out, err := exec.Command("gcc", "-O1", "-fPIE", "-pie", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	addr, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(line), "0x"), 16, 64)
	if err != nil {
		t.Fatalf("program said %q", line)
	}
	maps, err := procfs.NewFS("/").ProcMaps(cmd.Process.Pid)
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
