package procfs

// Versions of the kernel and of the C library.
//
// /proc/sys/kernel/osrelease (kernel/utsname_sysctl.c), the release uname -r
// prints:
//
//	6.18.44-fc-v657
//
// glibc has no /proc file. Its release banner is a string constant inside
// libc.so.6 (csu/version.c), printed when the library is run as a program:
//
//	GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36.
//	GNU C Library (GNU libc) stable release version 2.17, by Roland McGrath et al.   (≤2.25)
//	GNU C Library (GNU libc) development release version 2.40.9000.
//
// A capture cannot carry the 2 MB library, so it stores the banner line as
// the text file memdoctor/glibc-version. musl and other C libraries have no
// such banner.

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"sync"
)

// KernelRelease reads proc/sys/kernel/osrelease.
func (f FS) KernelRelease() (string, error) {
	const file = "proc/sys/kernel/osrelease"
	data, err := f.ReadFile(file)
	if err != nil {
		return "", err
	}
	rel := trimSpace(string(data))
	if rel == "" {
		return "", perr(file, 0, "empty")
	}
	return rel, nil
}

// GlibcVersionFile is the capture file holding the glibc banner line.
const GlibcVersionFile = "memdoctor/glibc-version"

// libcPaths are where distributions install libc.so.6, most specific first.
func libcPaths() [7]string {
	return [...]string{
		"lib/x86_64-linux-gnu/libc.so.6",
		"lib/aarch64-linux-gnu/libc.so.6",
		"lib64/libc.so.6",
		"lib/libc.so.6",
		"usr/lib/x86_64-linux-gnu/libc.so.6",
		"usr/lib64/libc.so.6",
		"usr/lib/libc.so.6",
	}
}

// libcCandidates are the libcPaths under this root, then under
// proc/1/root when this root has none of them: a memdoctor in an image
// without a C library (FROM scratch) sharing the host's pid namespace
// (a Kubernetes pod with hostPID) reads the host's library through init's
// root. On a host, or in a container without the host's pids, proc/1/root
// is this same root and nothing more is found.
func (f FS) libcCandidates() []string {
	local := libcPaths()
	for _, name := range local {
		if f.Exists(name) {
			return local[:]
		}
	}
	out := local[:]
	for _, name := range local {
		out = append(out, "proc/1/root/"+name)
	}
	return out
}

// GlibcVersion returns the host's glibc version ("2.36") and the release
// string it came from, by scanning libc.so.6 for the "GNU C Library" banner.
// A capture carries it as the text file "memdoctor/glibc-version". When
// neither is found (a musl host, a capture without it) the error wraps
// fs.ErrNotExist.
func (f FS) GlibcVersion() (version, banner string, err error) {
	if f.GlibcBanner != "" {
		if v, b, ok := ParseGlibcBanner([]byte(f.GlibcBanner)); ok {
			return v, b, nil
		}
	}
	data, err := f.ReadFile(GlibcVersionFile)
	switch {
	case err == nil:
		v, b, ok := ParseGlibcBanner(data)
		if !ok {
			return "", "", perr(GlibcVersionFile, 1, "no \"GNU C Library ... release version X.Y\" banner")
		}
		return v, b, nil
	case !IsNotExist(err):
		return "", "", err
	}
	var noBanner []string
	for _, name := range f.libcCandidates() {
		v, b, ok, err := f.libcBanner(name)
		if err != nil {
			if IsNotExist(err) {
				continue
			}
			return "", "", err
		}
		if ok {
			return v, b, nil
		}
		noBanner = append(noBanner, name)
	}
	if noBanner != nil {
		return "", "", fmt.Errorf("glibc version: no release banner in %v: %w", noBanner, fs.ErrNotExist)
	}
	return "", "", fmt.Errorf("glibc version: neither %s nor libc.so.6 under lib, lib64, usr/lib (here or in /proc/1/root): %w", GlibcVersionFile, fs.ErrNotExist)
}

// libcBanners remembers the banner of each libc file read (by device,
// inode, size and modification time): libc.so.6 is a few MiB, and the
// recorder asks every sample. An upgrade replaces the file, so a new
// version is read at once.
var libcBanners sync.Map // libcKey -> libcBanner

type libcKey struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

type libcBanner struct {
	version, banner string
	ok              bool
}

// libcBanner scans the file name for the glibc banner, a window at a time
// (never the whole library in memory), or answers from libcBanners.
func (f FS) libcBanner(name string) (version, banner string, ok bool, err error) {
	file, err := f.fsys.Open(clean(name))
	if err != nil {
		return "", "", false, err
	}
	defer func() { _ = file.Close() }() // read-only
	fi, err := file.Stat()
	if err != nil {
		return "", "", false, err
	}
	var key libcKey
	dev, ino, cacheable := fileID(fi)
	if cacheable {
		key = libcKey{dev, ino, fi.Size(), fi.ModTime().UnixNano()}
		if c, hit := libcBanners.Load(key); hit {
			c := c.(libcBanner)
			return c.version, c.banner, c.ok, nil
		}
	}
	version, banner, ok, err = scanLibc(file, fi.Size())
	if err == nil && cacheable {
		libcBanners.Store(key, libcBanner{version, banner, ok})
	}
	return version, banner, ok, err
}

// scanLibc scans a libc of size bytes for the banner: only its read-only
// data (.rodata, where csu/version.c's string lies: some 150 KiB of a
// 1.9 MB library, 3 reads instead of 26) when the file can be read at
// offsets and its section headers name that section within the file;
// else, or when the banner is not there, the whole file.
func scanLibc(file fs.File, size int64) (version, banner string, ok bool, err error) {
	ra, isRA := file.(io.ReaderAt)
	if !isRA {
		return scanGlibcBanner(file)
	}
	if ef, err := elf.NewFile(io.NewSectionReader(ra, 0, size)); err == nil {
		s := ef.Section(".rodata")
		if s != nil && s.Type == elf.SHT_PROGBITS && s.Size <= uint64(size) && s.Offset <= uint64(size)-s.Size {
			version, banner, ok, err = scanGlibcBanner(io.NewSectionReader(ra, int64(s.Offset), int64(s.Size)))
			if err != nil || ok {
				return version, banner, ok, err
			}
		}
	}
	return scanGlibcBanner(io.NewSectionReader(ra, 0, size))
}

// bannerWindow is how much of a libc is held at once; bannerMax is more
// than a banner's length (ParseGlibcBanner reads at most 512 bytes from
// its start), kept from one window to the next so that no banner is cut.
const (
	bannerWindow = 16 << 10
	bannerMax    = 1024
)

// scanGlibcBanner is ParseGlibcBanner over r, a window at a time.
func scanGlibcBanner(r io.Reader) (version, banner string, ok bool, err error) {
	buf := make([]byte, 0, bannerWindow+bannerMax)
	for {
		n, rerr := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !eof {
			return "", "", false, rerr
		}
		// A banner starting in the last bannerMax bytes may be cut: it is
		// found whole in the next window, which starts with those bytes.
		safe := len(buf)
		if !eof {
			safe = max(0, len(buf)-bannerMax)
		}
		if v, b, found := ParseGlibcBanner(buf); found && (eof || bytes.Index(buf, []byte(b)) < safe) {
			return v, b, true, nil
		}
		if eof {
			return "", "", false, nil
		}
		buf = buf[:copy(buf, buf[safe:])]
	}
}

// ParseGlibcBanner finds the glibc release banner in a libc binary (or in
// a text file holding it). banner is the line from "GNU C Library" to the
// end of its sentence; version is the number after "release version",
// without a trailing period.
func ParseGlibcBanner(data []byte) (version, banner string, ok bool) {
	marker := []byte("GNU C Library")
	rv := []byte("release version ")
	for {
		i := bytes.Index(data, marker)
		if i < 0 {
			return "", "", false
		}
		data = data[i:]
		// The banner ends at the first control byte (NUL or newline).
		end := 0
		for end < len(data) && end < 512 && data[end] >= 0x20 && data[end] != 0x7f {
			end++
		}
		line := data[:end]
		data = data[len(marker):]
		j := bytes.Index(line, rv)
		if j < 0 {
			continue
		}
		v := line[j+len(rv):]
		n := 0
		for n < len(v) && (v[n] >= '0' && v[n] <= '9' || v[n] == '.') {
			n++
		}
		v = bytes.TrimRight(v[:n], ".")
		if len(v) == 0 || v[0] < '0' || v[0] > '9' || bytes.IndexByte(v, '.') < 0 {
			continue
		}
		return string(v), string(bytes.TrimRight(line, " \t")), true
	}
}
