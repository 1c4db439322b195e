package inject

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/elfsym"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/safeio"
	"golang.org/x/sys/unix"
)

// maxLibSize bounds the library file memdoctor parses (libc.so.6 is about
// 2 MB): the file comes from the target and is not trusted.
const maxLibSize = 256 << 20

// IsLibc reports whether a mapped file is glibc's C library.
func IsLibc(p string) bool {
	b := path.Base(strings.TrimSuffix(p, " (deleted)"))
	return b == "libc.so.6" || strings.HasPrefix(b, "libc-2.") && strings.HasSuffix(b, ".so")
}

// Resolve finds functions in the C library process pid has mapped and
// returns their addresses in that process. It reads the library the
// process really runs: through /proc/PID/map_files (the mapped file itself,
// even if replaced on disk or in another mount namespace), else through
// /proc/PID/root, checked against the mapping's device and inode. Only
// default-version (name@@VERSION) function symbols are taken, and every
// address must fall in an executable mapping of that library.
func Resolve(pid int, maps []procfs.Mapping, names ...string) (map[string]uint64, error) {
	var libc []procfs.Mapping
	for _, m := range maps {
		if m.Path == "" || !IsLibc(m.Path) {
			continue
		}
		if len(libc) > 0 && (m.Inode != libc[0].Inode || m.Dev != libc[0].Dev) {
			continue // a second libc (dlmopen): the first one is the process' own
		}
		libc = append(libc, m)
	}
	if len(libc) == 0 {
		return nil, fmt.Errorf("%w: pid %d has no libc.so.6 mapped", ErrNoSymbol, pid)
	}
	out, missing, err := resolveIn(pid, libc, names)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s is not exported by %s in pid %d", ErrNoSymbol, missing[0], libc[0].Path, pid)
	}
	return out, nil
}

// ResolveObject finds functions in the object the process maps at path
// object (as /proc/PID/maps names it: the allocator that serves malloc,
// from FindMallocServer), read as Resolve reads libc. It returns the
// addresses of the names the object exports, with the same checks; a name
// it does not export is left out, for the caller to choose between
// alternatives (mallctl or je_mallctl).
func ResolveObject(pid int, maps []procfs.Mapping, object string, names ...string) (map[string]uint64, error) {
	var ms []procfs.Mapping
	for _, m := range maps {
		if m.Path == "" || strings.TrimSuffix(m.Path, " (deleted)") != object {
			continue
		}
		if len(ms) > 0 && (m.Inode != ms[0].Inode || m.Dev != ms[0].Dev) {
			continue
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: pid %d does not map %s", ErrNoSymbol, pid, object)
	}
	out, _, err := resolveIn(pid, ms, names)
	return out, err
}

// resolveIn reads the dynamic symbols of the object behind the mappings
// (all of one file) and places names in the process; missing lists the
// names the object does not export.
func resolveIn(pid int, obj []procfs.Mapping, names []string) (out map[string]uint64, missing []string, err error) {
	first := obj[0]
	for _, m := range obj {
		if m.Offset < first.Offset {
			first = m
		}
	}
	f, err := openMapped(pid, first)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	syms, progs, err := readDynsyms(f, first.Path)
	if err != nil {
		return nil, nil, err
	}
	page := uint64(os.Getpagesize())
	var bias uint64
	found := false
	for _, p := range progs {
		if p.Type == elf.PT_LOAD && p.Off&^(page-1) == first.Offset {
			bias = first.Start - p.Vaddr&^(page-1)
			found = true
			break
		}
	}
	if !found {
		return nil, nil, fmt.Errorf("%w: no loadable segment of %s matches its mapping at offset %#x in pid %d", ErrNoSymbol, first.Path, first.Offset, pid)
	}
	out = make(map[string]uint64, len(names))
	for _, name := range names {
		s, ok := syms[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		addr := bias + s.Value
		exec := false
		for _, m := range obj {
			if addr >= m.Start && addr < m.End && strings.Contains(m.Perms, "x") {
				exec = true
			}
		}
		if !exec {
			return nil, nil, fmt.Errorf("%w: %s would be at %#x in pid %d, outside %s's code", ErrNoSymbol, name, addr, pid, first.Path)
		}
		out[name] = addr
	}
	return out, missing, nil
}

// openMapped opens the file behind a mapping.
func openMapped(pid int, m procfs.Mapping) (*os.File, error) {
	f, _, err := openMappedFD(pid, m)
	if err != nil {
		return nil, err
	}
	// Ordinary blocking reads of a regular file.
	if err := unix.SetNonblock(f.fd, false); err != nil {
		_ = f.Close() // read-only
		return nil, err
	}
	return os.NewFile(uintptr(f.fd), f.path), nil
}

// objFile is an object opened to be read with pread alone: a descriptor,
// not an *os.File (whose making asked for its flags three times, and
// whose reads go through the runtime's poller bookkeeping).
type objFile struct {
	fd   int
	path string
}

// ReadAt reads len(p) bytes at off, or fewer and an error (io.EOF at the
// end of the file), as io.ReaderAt asks.
func (f objFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrInvalid}
	}
	n := 0
	for n < len(p) {
		k, err := unix.Pread(f.fd, p[n:], off+int64(n))
		if err == unix.EINTR { //nolint:errorlint // raw errno from the syscall
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: f.path, Err: err}
		}
		if k <= 0 {
			return n, io.EOF
		}
		n += k
	}
	return n, nil
}

// Close closes the descriptor.
func (f objFile) Close() error { return unix.Close(f.fd) }

// openMappedFD opens the file behind mapping m of process pid: its
// /proc/PID/map_files entry, else the path in the process' root checked
// against the mapping's device and inode (never a file replaced since),
// with what the open's fstat said of it. Either is a regular file of at
// most maxLibSize bytes (safeio).
func openMappedFD(pid int, m procfs.Mapping) (objFile, safeio.Info, error) {
	mf := procfs.PIDPath(pid, fmt.Sprintf("map_files/%x-%x", m.Start, m.End))
	if fd, info, err := safeio.OpenFileFD(mf, maxLibSize); err == nil {
		return objFile{fd: fd, path: mf}, info, nil
	}
	// map_files needs CAP_SYS_ADMIN; the process' root is the next best.
	p := strings.TrimSuffix(m.Path, " (deleted)")
	if !filepath.IsAbs(p) {
		return objFile{}, safeio.Info{}, fmt.Errorf("%w: mapping path %q of pid %d is not absolute", ErrNoSymbol, p, pid)
	}
	// Resolved in the process' root, following no link: what the mapping
	// names there now may be anything (a FIFO, a link to another file).
	fd, info, err := safeio.OpenInRootFD(procfs.PIDPath(pid, "root"), p, maxLibSize)
	if err != nil {
		if strings.HasSuffix(m.Path, " (deleted)") {
			return objFile{}, safeio.Info{}, fmt.Errorf("%w: pid %d runs %s, which was replaced on disk, and its mapped copy is not readable here (needs CAP_SYS_ADMIN): restart the process, or run memdoctor as root", ErrNoSymbol, pid, p)
		}
		return objFile{}, safeio.Info{}, fmt.Errorf("%w: opening pid %d's %s: %w", ErrNoSymbol, pid, p, err)
	}
	if err := sameFile(info, m); err != nil {
		_ = unix.Close(fd) // read-only
		return objFile{}, safeio.Info{}, fmt.Errorf("%w: pid %d's %s: %w", ErrNoSymbol, pid, p, err)
	}
	return objFile{fd: fd, path: p}, info, nil
}

// sameFile checks that an opened file is the very one the process mapped
// (device and inode).
func sameFile(info safeio.Info, m procfs.Mapping) error {
	if info.Ino != m.Inode {
		return fmt.Errorf("inode %d, the process mapped inode %d: the file was replaced since", info.Ino, m.Inode)
	}
	if maj, mnr, ok := strings.Cut(m.Dev, ":"); ok {
		a, err1 := strconv.ParseUint(maj, 16, 32)
		b, err2 := strconv.ParseUint(mnr, 16, 32)
		if err1 == nil && err2 == nil && (a != devMajor(info.Dev) || b != devMinor(info.Dev)) {
			return fmt.Errorf("device %d:%d, the process mapped %s", devMajor(info.Dev), devMinor(info.Dev), m.Dev)
		}
	}
	return nil
}

func devMajor(d uint64) uint64 { return (d>>8)&0xfff | (d>>32)&^0xfff }
func devMinor(d uint64) uint64 { return d&0xff | (d>>12)&^0xff }

// readDynsyms parses the library: its default-version function symbols by
// name and its program headers. A malformed file is an error, never a
// panic.
func readDynsyms(f *os.File, name string) (syms map[string]elfsym.Symbol, progs []elf.ProgHeader, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: malformed ELF (%v)", ErrNoSymbol, name, r)
		}
	}()
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrNoSymbol, name, err)
	}
	if ef.Class != elf.ELFCLASS64 || ef.Machine != nativeMachine {
		return nil, nil, fmt.Errorf("%w: %s is %s %s, memdoctor calls into %s only", ErrUnsupported, name, ef.Class, ef.Machine, nativeMachine)
	}
	return parseDynsyms(ef)
}

// parseDynsyms keeps the defined function symbols of default version
// (name@VERSION is an old version kept for old binaries), read within
// elfsym's bounds: the file is the target's.
func parseDynsyms(ef *elf.File) (map[string]elfsym.Symbol, []elf.ProgHeader, error) {
	ds, err := elfsym.Read(context.Background(), ef, elf.SHT_DYNSYM, elfsym.Default, func(s *elfsym.Symbol) bool { return s.Func() && !s.Hidden })
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNoSymbol, err)
	}
	syms := make(map[string]elfsym.Symbol, len(ds))
	for _, s := range ds {
		syms[s.Name] = s
	}
	progs := make([]elf.ProgHeader, 0, len(ef.Progs))
	for _, p := range ef.Progs {
		progs = append(progs, p.ProgHeader)
	}
	return syms, progs, nil
}

// OpenMapped opens the file behind mapping m of process pid: its
// /proc/PID/map_files entry, else the path in the process' root checked
// against the mapping's device and inode (never a file replaced since).
func OpenMapped(pid int, m procfs.Mapping) (*os.File, error) {
	return openMapped(pid, m)
}
