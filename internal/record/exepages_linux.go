package record

import (
	"debug/elf"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// trimExecutablePages lowers what this process' own executable costs its
// memory cgroup, once start-up is over. A page fault on a file mapping
// reads ahead the device's whole read-ahead window around the page (8 MiB
// on a virtio disk): starting memdoctor, a single binary of some 30 MB
// for every command, brought all of it into the page cache, charged to
// the cgroup of the process that faulted first, while a recorder runs a
// small part of that code. So, for every mapping of the executable:
// madvise(MADV_RANDOM), so that a later fault reads the page it needs and
// no window around it; the mappings that cannot have been written are
// dropped (MADV_DONTNEED; in a position-independent executable only
// code, as its read-only data may hold what the loader relocated); then
// posix_fadvise(POSIX_FADV_DONTNEED) over the file drops from the page
// cache what no process maps any longer. Pages another process maps (a
// second memdoctor) stay: the kernel never drops a mapped page. What the
// recorder runs next is faulted back in a page at a time. Measured with
// mincore on Linux 6.18: the read-only data goes, but most of the text
// segment stays cached though only some 1.5 MiB of it is mapped again (the
// cause is not known yet; MADV_PAGEOUT did not change it). Returns the
// bytes of the executable cached before and after.
func trimExecutablePages() (before, after int64, err error) {
	f, err := os.Open(procfs.SelfExe)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("no inode for /proc/self/exe")
	}
	before, _ = cachedBytes(f, st.Size())
	codeOnly := true
	if ef, err := elf.NewFile(f); err == nil {
		codeOnly = ef.Type != elf.ET_EXEC
	}
	maps, err := procfs.Live().SelfMaps()
	if err != nil {
		return before, before, err
	}
	for _, m := range exeMappings(maps, sys.Ino) {
		// MADV_RANDOM only changes how faults read ahead: safe on any
		// mapping, writable ones included.
		if err := madvise(m.start, m.end-m.start, syscall.MADV_RANDOM); err != nil {
			return before, before, fmt.Errorf("madvise(MADV_RANDOM): %w", err)
		}
		p := m.perms
		if p[1] == 'w' || p[3] != 'p' || codeOnly && p[2] != 'x' {
			continue // private copies or relocated data: never dropped
		}
		if err := madvise(m.start, m.end-m.start, syscall.MADV_DONTNEED); err != nil {
			return before, before, fmt.Errorf("madvise(MADV_DONTNEED): %w", err)
		}
	}
	if err := fadviseDontNeed(f); err != nil {
		return before, before, err
	}
	after, _ = cachedBytes(f, st.Size())
	return before, after, nil
}

type mapping struct {
	start, end uintptr
	perms      string
}

// exeMappings returns the mappings (procfs.SelfMaps) of the file
// with inode ino (matched by inode, not by a path that may have spaces or
// " (deleted)" appended).
func exeMappings(maps []procfs.Mapping, ino uint64) []mapping {
	var out []mapping
	for _, m := range maps {
		if m.Inode != ino || m.Path == "" || m.End <= m.Start {
			continue
		}
		out = append(out, mapping{uintptr(m.Start), uintptr(m.End), m.Perms})
	}
	return out
}

func madvise(addr, length uintptr, advice int) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, length, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// fadviseDontNeed asks the kernel to drop f's pages no process maps from
// the page cache (clean ones; a read-only file has no others).
func fadviseDontNeed(f *os.File) error {
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("posix_fadvise(POSIX_FADV_DONTNEED): %w", err)
	}
	return nil
}

// cachedBytes counts with mincore the bytes of f's first size bytes that
// are in the page cache, mapping the file without touching its pages.
func cachedBytes(f *os.File, size int64) (int64, error) {
	if size <= 0 {
		return 0, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer func() { _ = unix.Munmap(m) }()
	page := int64(os.Getpagesize())
	vec := make([]byte, (size+page-1)/page)
	if err := mincoreRange(m, vec); err != nil {
		return 0, err
	}
	var n int64
	for _, v := range vec {
		if v&1 != 0 {
			n += page
		}
	}
	return n, nil
}

// mincoreRange fills vec, a byte a page, with the residency of the pages
// of the mapping m (bit 0 set: in the page cache).
func mincoreRange(m, vec []byte) error {
	if len(m) == 0 {
		return nil
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return e
	}
	return nil
}

// dropExecutableCache drops from the page cache the pages of this
// process' executable no process maps, after a child process of the same
// binary (memdoctor diagnose, report) exited: its start-up read the whole
// binary again, charged to the recorder's memory cgroup. The pages this
// process or any other maps stay.
func dropExecutableCache() error {
	f, err := os.Open(procfs.SelfExe)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	return fadviseDontNeed(f)
}
