package heapprof

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// lineProg calls callee from the line marked "call-site"; callee prints
// its return address (in main, just after that call) and waits.
const lineProg = `#include <stdio.h>
__attribute__((noinline)) void callee(void)
{
	printf("%p\n", __builtin_return_address(0));
	fflush(stdout);
	getchar();
}
int main(void)
{
	callee(); /* call-site */
	return 0;
}
`

// markerLine is the 1-based line of marker in src.
func markerLine(t *testing.T, src, marker string) int {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("no %q in the source", marker)
	return 0
}

// runLineProg starts bin and returns the return address it printed and
// its mappings.
func runLineProg(t *testing.T, bin string) (uint64, []procfs.Mapping) {
	t.Helper()
	pid, addrs := startProg(t, bin)
	if len(addrs) != 1 {
		t.Fatalf("program said %#x", addrs)
	}
	pc := addrs[0]
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	return pc, maps
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func openPath(m procfs.Mapping) (*os.File, error) { return os.Open(m.Path) }

// A return address is given the source line of its call from DWARF: in
// the program itself (built with -g), in a separate debug file found by
// build ID, and in one named by .gnu_debuglink (not in another build's file
// under that name); a program without DWARF, or the lookup turned off,
// gives no line. The time to symbolize with and
// without line info is logged.
func TestSymbolizeLines(t *testing.T) {
	for _, tool := range []string{"gcc", "objcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "lines.c")
	if err := os.WriteFile(src, []byte(lineProg), 0o644); err != nil {
		t.Fatal(err)
	}
	want := markerLine(t, lineProg, "call-site")
	buildFrom := func(src, name string, flags ...string) string {
		bin := filepath.Join(dir, name)
		run(t, "gcc", append(flags, "-O1", "-Wl,--build-id", "-o", bin, src)...)
		return bin
	}
	build := func(name string, flags ...string) string { return buildFrom(src, name, flags...) }
	check := func(what, bin string, wantLine int) {
		t.Helper()
		pc, maps := runLineProg(t, bin)
		f := NewSymbolizer(openPath).Frame(maps, pc)
		if f.Function != "main" || f.Line != wantLine || (wantLine != 0 && filepath.Base(f.File) != "lines.c") {
			t.Errorf("%s: %s:%d in %q, want lines.c:%d in main", what, f.File, f.Line, f.Function, wantLine)
		}
	}

	withDebug := build("with-g", "-g")
	check("-g", withDebug, want)
	check("no -g", build("without-g"), 0)

	// Debug info moved out, found by build ID under the debug root.
	saved := debugRoot
	t.Cleanup(func() { debugRoot = saved })
	debugRoot = filepath.Join(dir, "debugroot")
	byID := build("by-build-id", "-g")
	id := buildIDOf(t, byID)
	idFile := filepath.Join(debugRoot, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(idFile), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "objcopy", "--only-keep-debug", byID, idFile)
	run(t, "objcopy", "--strip-debug", byID)
	check("build-id debug file", byID, want)

	// Debug info moved out, named by .gnu_debuglink, in .debug next to it.
	linked := build("by-link", "-g")
	if err := os.Mkdir(filepath.Join(dir, ".debug"), 0o755); err != nil {
		t.Fatal(err)
	}
	linkFile := filepath.Join(dir, ".debug", "by-link.dbg")
	run(t, "objcopy", "--only-keep-debug", linked, linkFile)
	run(t, "objcopy", "--strip-debug", "--remove-section=.note.gnu.build-id", linked)
	run(t, "objcopy", "--add-gnu-debuglink="+linkFile, linked)
	check("debuglink debug file", linked, want)
	// Another build's debug file under that name (the source one line
	// down): its CRC differs, no line rather than a wrong one.
	src2 := filepath.Join(dir, "other", "lines.c")
	if err := os.MkdirAll(filepath.Dir(src2), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src2, []byte("\n"+lineProg), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "objcopy", "--only-keep-debug", buildFrom(src2, "other-build", "-g"), linkFile)
	check("debuglink to another build", linked, 0)

	// Turned off: no line. And the time a lookup costs, both ways.
	pc, maps := runLineProg(t, withDebug)
	off := NewSymbolizer(openPath)
	off.SetLines(false)
	if f := off.Frame(maps, pc); f.Line != 0 || f.Function != "main" {
		t.Errorf("lines off: %+v", f)
	}
	timeIt := func(lines bool) time.Duration {
		s := NewSymbolizer(openPath)
		s.SetLines(lines)
		start := time.Now()
		s.Frame(maps, pc)
		return time.Since(start)
	}
	t.Logf("first address of a file: %s with DWARF, %s without", timeIt(true), timeIt(false))
}

// buildIDOf reads bin's build ID as hex.
func buildIDOf(t *testing.T, bin string) string {
	t.Helper()
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ef.Close() }()
	id := readBuildID(ef)
	if len(id) < 4 {
		t.Fatalf("%s: no build ID", bin)
	}
	return id
}
