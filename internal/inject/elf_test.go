//go:build linux && amd64

package inject

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// startSleep starts a glibc program that stays blocked in clock_nanosleep.
func startSleep(t *testing.T) (int, []procfs.Mapping) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	waitSyscall(t, pid, pid, 230)
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	return pid, maps
}

func TestResolve(t *testing.T) {
	pid, maps := startSleep(t)
	syms, err := Resolve(pid, maps, "malloc_info", "malloc_trim", "fmemopen", "__errno_location")
	if err != nil {
		t.Fatal(err)
	}
	for n, a := range syms {
		if a == 0 {
			t.Errorf("%s at 0", n)
		}
	}
	// The default fmemopen (GLIBC_2.22), not the old one kept for old
	// binaries: the two differ, and the old one is not what C code
	// compiled today calls.
	t.Logf("%#x", syms)

	// Refusals, each saying why.
	if _, err := Resolve(pid, maps, "no_such_function_here"); !errors.Is(err, ErrNoSymbol) || !strings.Contains(err.Error(), "not exported") {
		t.Errorf("unknown function: %v", err)
	}
	var noLibc []procfs.Mapping
	for _, m := range maps {
		if !IsLibc(m.Path) {
			noLibc = append(noLibc, m)
		}
	}
	if _, err := Resolve(pid, noLibc, "malloc_info"); !errors.Is(err, ErrNoSymbol) || !strings.Contains(err.Error(), "no libc.so.6") {
		t.Errorf("no libc: %v", err)
	}
	// A mapping whose file is not the one on disk (another inode), and
	// whose map_files entry does not exist: refused, never read.
	var forged []procfs.Mapping
	for _, m := range maps {
		if IsLibc(m.Path) {
			m.Inode++
			m.Start, m.End = m.Start+1<<40, m.End+1<<40
		}
		forged = append(forged, m)
	}
	if _, err := Resolve(pid, forged, "malloc_info"); !errors.Is(err, ErrNoSymbol) || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("forged inode: %v", err)
	}
}

// A library file that is not a sane ELF is an error, never a panic.
func TestReadDynsymsRefusesJunk(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"empty":     nil,
		"text":      []byte("not an ELF at all"),
		"truncated": elfHeadOf(t, 100),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := readDynsyms(f, name); err == nil {
			t.Errorf("%s: accepted", name)
		}
		_ = f.Close()
	}
}

func elfHeadOf(t testing.TB, n int) []byte {
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/bin/sleep"} {
		if b, err := os.ReadFile(p); err == nil && len(b) > n {
			return b[:n]
		}
	}
	t.Skip("no ELF file to cut")
	return nil
}

func FuzzReadDynsyms(f *testing.F) {
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/bin/true"} {
		if b, err := os.ReadFile(p); err == nil {
			if len(b) > 1<<20 {
				b = b[:1<<20] // the headers, dynsym and dynstr are near the front
			}
			f.Add(b)
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "lib.so")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = fh.Close() }()
		syms, progs, err := readDynsyms(fh, "lib.so")
		if err != nil {
			return
		}
		for n, s := range syms {
			if n != s.Name || s.Value == 0 {
				t.Fatalf("symbol %q: %+v", n, s)
			}
		}
		_ = progs
	})
}
