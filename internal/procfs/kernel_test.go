package procfs

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestKernelRelease(t *testing.T) {
	t.Parallel()
	got, err := hostFS().KernelRelease()
	if err != nil || got != "6.18.44-fc-v657" {
		t.Errorf("KernelRelease = %q, %v", got, err)
	}
	_, err = NewFSFrom(fstest.MapFS{"proc/sys/kernel/osrelease": {Data: []byte("\n")}}, 4096).KernelRelease()
	wantParseError(t, err, "proc/sys/kernel/osrelease", 0)
}

const debianBanner = "GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36."

// fakeLibc is the region of a libc.so.6 around its banner: NUL-terminated
// strings, an unrelated mention of the library first.
func fakeLibc(banner string) []byte {
	return []byte("\x7fELF\x02\x01\x01\x00\x00GNU C Library\x00__libc_start_main\x00" + banner +
		"\nCopyright (C) 2022 Free Software Foundation, Inc.\nThis is free software;\x00\x00\xff\xfe")
}

func TestGlibcVersion(t *testing.T) {
	t.Parallel()
	type result struct{ Version, Banner string }
	tests := []struct {
		name string
		fsys fs.FS
		want result
	}{
		{"capture file", nil, result{"2.36", debianBanner}},
		{"libc in the Debian multiarch dir", fstest.MapFS{"usr/lib/x86_64-linux-gnu/libc.so.6": {Data: fakeLibc(debianBanner)}},
			result{"2.36", debianBanner}},
		{"no libc here: init's, through proc/1/root (a FROM scratch image in a hostPID pod)", fstest.MapFS{
			"proc/1/root/lib/x86_64-linux-gnu/libc.so.6": {Data: fakeLibc(debianBanner)},
		}, result{"2.36", debianBanner}},
		{"a libc here wins over init's", fstest.MapFS{
			"lib64/libc.so.6": {Data: fakeLibc("GNU C Library (GNU libc) stable release version 2.17, by Roland McGrath et al.")},
			"proc/1/root/lib/x86_64-linux-gnu/libc.so.6": {Data: fakeLibc(debianBanner)},
		}, result{"2.17", "GNU C Library (GNU libc) stable release version 2.17, by Roland McGrath et al."}},
		{"libc in lib64, an unbannered one first", fstest.MapFS{
			"lib/x86_64-linux-gnu/libc.so.6": {Data: []byte("\x7fELF not glibc")},
			"lib64/libc.so.6":                {Data: fakeLibc("GNU C Library (GNU libc) stable release version 2.17, by Roland McGrath et al.")},
		}, result{"2.17", "GNU C Library (GNU libc) stable release version 2.17, by Roland McGrath et al."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := hostFS()
			if tt.fsys != nil {
				f = NewFSFrom(tt.fsys, 4096)
			}
			v, b, err := f.GlibcVersion()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(result{v, b}, tt.want); diff != "" {
				t.Errorf("GlibcVersion mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestGlibcVersionErrors(t *testing.T) {
	t.Parallel()
	for name, fsys := range map[string]fs.FS{
		"musl host":       fstest.MapFS{"lib/ld-musl-x86_64.so.1": {Data: []byte("musl")}},
		"libc, no banner": fstest.MapFS{"lib/libc.so.6": {Data: []byte("\x7fELF")}},
	} {
		_, _, err := NewFSFrom(fsys, 4096).GlibcVersion()
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: error %v, want one wrapping fs.ErrNotExist", name, err)
		}
	}
	_, _, err := NewFSFrom(fstest.MapFS{GlibcVersionFile: {Data: []byte("glibc 2.36\n")}}, 4096).GlibcVersion()
	wantParseError(t, err, GlibcVersionFile, 1)
}

func TestParseGlibcBanner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		in              string
		version, banner string
		ok              bool
	}{
		{"debian", debianBanner + "\n", "2.36", debianBanner, true},
		{"ubuntu in a binary", string(fakeLibc("GNU C Library (Ubuntu GLIBC 2.35-0ubuntu3.8) stable release version 2.35.")),
			"2.35", "GNU C Library (Ubuntu GLIBC 2.35-0ubuntu3.8) stable release version 2.35.", true},
		{"development", "GNU C Library (GNU libc) development release version 2.40.9000.\x00",
			"2.40.9000", "GNU C Library (GNU libc) development release version 2.40.9000.", true},
		{"rhel 6", "GNU C Library stable release version 2.12, by Roland McGrath et al.\n",
			"2.12", "GNU C Library stable release version 2.12, by Roland McGrath et al.", true},
		{"no version number", "GNU C Library stable release version x.\n", "", "", false},
		{"no banner", "hello", "", "", false},
		{"marker only", "GNU C Library", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, b, ok := ParseGlibcBanner([]byte(tt.in))
			if v != tt.version || b != tt.banner || ok != tt.ok {
				t.Errorf("ParseGlibcBanner = %q, %q, %v; want %q, %q, %v", v, b, ok, tt.version, tt.banner, tt.ok)
			}
		})
	}
}

func FuzzParseGlibcBanner(f *testing.F) {
	f.Add(readTestdata(f, "host/"+GlibcVersionFile))
	f.Add(fakeLibc(debianBanner))
	f.Add([]byte("GNU C Library release version 2..\x00GNU C Library release version 3.1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, b, ok := ParseGlibcBanner(data)
		if !ok {
			if v != "" || b != "" {
				t.Fatalf("not ok but returned %q, %q", v, b)
			}
			return
		}
		if !strings.HasPrefix(b, "GNU C Library") || !strings.Contains(b, "release version "+v) ||
			v[0] < '0' || v[0] > '9' || !strings.Contains(v, ".") || strings.HasSuffix(v, ".") {
			t.Fatalf("version %q, banner %q", v, b)
		}
	})
}

// A banner is found wherever it lies against the scanning windows (never
// cut in two), and a later "GNU C Library" mention does not hide it.
func TestScanGlibcBannerWindows(t *testing.T) {
	t.Parallel()
	lib := fakeLibc(debianBanner)
	for _, at := range []int{0, 100, bannerWindow - bannerMax - 1, bannerWindow - bannerMax, bannerWindow - 60,
		bannerWindow - 20, bannerWindow, bannerWindow + bannerMax - 5, 2*bannerWindow - bannerMax - 30, 3 * bannerWindow} {
		data := append(append(make([]byte, at), lib...), make([]byte, 300)...)
		v, b, ok, err := scanGlibcBanner(bytes.NewReader(data))
		wv, wb, wok := ParseGlibcBanner(data)
		if err != nil || !ok || v != wv || b != wb || !wok {
			t.Errorf("banner at %d: %q %q %v %v; whole file: %q %q", at, v, b, ok, err, wv, wb)
		}
	}
	if _, _, ok, err := scanGlibcBanner(bytes.NewReader(make([]byte, 3*bannerWindow))); ok || err != nil {
		t.Errorf("no banner: ok %v, err %v", ok, err)
	}
}

// This host's libc: the same banner as reading it whole, without holding
// the library in memory, and once per file (the recorder asks every sample).
func TestGlibcVersionLiveIsCheap(t *testing.T) {
	f := NewFS("/")
	var path, wv, wb string
	var wok bool
	for _, p := range libcPaths() {
		if b, err := os.ReadFile("/" + p); err == nil {
			path = p
			wv, wb, wok = ParseGlibcBanner(b)
			break
		}
	}
	if path == "" {
		t.Skip("no libc.so.6 on this host")
	}
	libcBanners.Clear()
	alloc := func(fn func()) uint64 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		fn()
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	var v, b string
	var err error
	first := alloc(func() { v, b, err = f.GlibcVersion() })
	if err != nil || !wok || v != wv || b != wb {
		t.Fatalf("GlibcVersion = %q %q %v; whole %s: %q %q", v, b, err, path, wv, wb)
	}
	again := alloc(func() { v, b, err = f.GlibcVersion() })
	if err != nil || v != wv {
		t.Fatalf("again: %q %v", v, err)
	}
	t.Logf("%s: %d bytes allocated the first time, %d the next", path, first, again)
	if first > 256<<10 {
		t.Errorf("reading the glibc version allocated %d KiB: the library was held whole", first>>10)
	}
	if again > 16<<10 {
		t.Errorf("asking again allocated %d bytes: not remembered", again)
	}
}

// countingFS counts the bytes read from the files it opens.
type countingFS struct {
	fs.FS
	read *atomic.Int64
}

type countingFile struct {
	fs.File
	read *atomic.Int64
}

func (c countingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return countingFile{f, c.read}, nil
}

func (c countingFile) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c countingFile) ReadAt(p []byte, off int64) (int, error) {
	ra, ok := c.File.(io.ReaderAt)
	if !ok {
		return 0, fmt.Errorf("%T cannot read at an offset", c.File)
	}
	n, err := ra.ReadAt(p, off)
	c.read.Add(int64(n))
	return n, err
}

// This host's libc: its banner is found reading its read-only data, not
// the whole library up to it (the banner lies near the end of a 1.9 MB
// Debian libc, after 1.6 MB of code).
func TestGlibcVersionReadsOnlyReadOnlyData(t *testing.T) {
	var path string
	for _, p := range libcPaths() {
		if _, err := os.Stat("/" + p); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no libc.so.6 on this host")
	}
	ef, err := elf.Open("/" + path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	rodata := ef.Section(".rodata")
	_ = ef.Close()
	if rodata == nil {
		t.Skipf("%s has no .rodata", path)
	}
	whole, err := os.ReadFile("/" + path)
	if err != nil {
		t.Fatal(err)
	}
	wv, wb, wok := ParseGlibcBanner(whole)
	if !wok {
		t.Skipf("%s has no glibc banner", path)
	}
	libcBanners.Clear() // read, not remembered
	var read atomic.Int64
	f := NewFSFrom(countingFS{os.DirFS("/"), &read}, 4096)
	v, b, ok, err := f.libcBanner(path)
	if err != nil || !ok || v != wv || b != wb {
		t.Fatalf("libcBanner(%s) = %q %q %v %v; the whole file says %q %q", path, v, b, ok, err, wv, wb)
	}
	// the ELF header, program and section headers and their names, then .rodata
	limit := int64(rodata.Size) + 64<<10
	t.Logf("%s: %d bytes read for the banner; .rodata is %d of %d", path, read.Load(), rodata.Size, len(whole))
	if read.Load() == 0 || read.Load() > limit {
		t.Errorf("%d bytes of %s read for its banner, more than its .rodata (%d) and headers", read.Load(), path, rodata.Size)
	}
}
