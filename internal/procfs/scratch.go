package procfs

import (
	"bytes"
	"sync"
)

// A file that is parsed and dropped at once (a process' status, maps or
// smaps_rollup, slabinfo, a sysctl) is read into a buffer kept for the
// next read instead of a new one each time: a recorder's sample reads
// some 600 such files, 1.5 MB of buffers a sample the garbage collector
// then had to find. The parsers copy what they keep (string(data)), so
// nothing returned aliases a buffer once the read returns.
//
// Bounded: at most scratchKeep buffers are kept, each of at most
// scratchMax bytes; a larger file is read into a buffer of its own
// (within the FS's limit, as ReadFile) and that buffer is dropped.
const (
	scratchKeep = 4
	scratchMax  = 256 << 10
)

var scratch struct {
	mu   sync.Mutex
	free [][]byte
}

func getScratch() []byte {
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	if n := len(scratch.free); n > 0 {
		b := scratch.free[n-1]
		scratch.free[n-1] = nil
		scratch.free = scratch.free[:n-1]
		return b
	}
	// A first buffer holds a process' status, or a small process' maps,
	// whole; nil made the read go through a pool's buffer and copy out
	// of it.
	return make([]byte, 0, scratchFirst)
}

// scratchFirst is a new scratch buffer's size.
const scratchFirst = 8 << 10

func putScratch(b []byte) {
	if cap(b) == 0 || cap(b) > scratchMax {
		return
	}
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	if len(scratch.free) < scratchKeep {
		scratch.free = append(scratch.free, b[:0])
	}
}

// intoReader is an fs.FS that reads a file into a buffer it is given
// (safeio.DirFS on the live host).
type intoReader interface {
	ReadFileInto(name string, buf []byte) ([]byte, error)
}

// parseFile reads name into a kept buffer and hands it to parse, which
// must copy whatever it keeps of it: the buffer is reused by the next
// read once parse returns. Over an fs.FS that cannot read into a buffer
// (a capture) it reads as ReadFile.
func parseFile[T any](f FS, name string, parse func(data []byte) (T, error)) (T, error) {
	r, ok := f.fsys.(intoReader)
	if !ok {
		data, err := f.ReadFile(name)
		if err != nil {
			var zero T
			return zero, err
		}
		return parse(data)
	}
	kept := getScratch()
	buf, err := r.ReadFileInto(clean(name), kept)
	if err != nil {
		putScratch(kept) // unused: the read hands out nothing on error
		var zero T
		return zero, err
	}
	v, err := parse(buf)
	putScratch(buf)
	return v, err
}

// onceReader reads a kernel file generated whole at its first read into a
// buffer it is given, without checking its kind when that read settles
// it (safeio.DirFS on the live host).
type onceReader interface {
	ReadOnceInto(name string, buf []byte) ([]byte, error)
}

// parseOnce is parseFile for a proc or sys file the kernel generates
// whole at its first read (a single_open file: a process' status,
// smaps_rollup, cgroup, stat or statm, meminfo, pressure, a sysctl or a
// sysfs attribute), named below proc/ or sys/ and never through a
// process' root, cwd or fd links: on the live host it costs open, read
// and close (safeio.ReadOnceInto), not also fstat and a read of the end.
func parseOnce[T any](f FS, name string, parse func(data []byte) (T, error)) (T, error) {
	r, ok := f.fsys.(onceReader)
	if !ok {
		return parseFile(f, name, parse)
	}
	kept := getScratch()
	buf, err := r.ReadOnceInto(clean(name), kept)
	if err != nil {
		putScratch(kept)
		var zero T
		return zero, err
	}
	v, err := parse(buf)
	putScratch(buf)
	return v, err
}

// ReadParsed reads name as the readers of this package do, into a kept
// buffer handed to parse, which must copy whatever it keeps of it (the
// buffer is reused once parse returns): for parsers of other packages.
func ReadParsed[T any](f FS, name string, parse func(data []byte) (T, error)) (T, error) {
	return parseFile(f, name, parse)
}

// ReadTrimmed reads a small kernel file generated whole at its first read
// (a sysctl, a sysfs attribute: see parseOnce) as a string without its
// surrounding blanks.
func (f FS) ReadTrimmed(name string) (string, error) {
	return parseOnce(f, name, func(data []byte) (string, error) {
		return string(bytes.TrimSpace(data)), nil
	})
}
