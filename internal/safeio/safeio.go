// Package safeio reads files and streams whose size and kind memdoctor does
// not control: captures, recordings, cron directories, config files,
// a --root tree, HTTP answers. Every read is bounded, and only regular
// files (and directories, to list them) are opened: a FIFO, a device or a
// socket — /dev/zero linked into a capture directory, say — is refused at
// once instead of blocking or being read forever. Opens never block: a
// FIFO is opened with O_NONBLOCK and refused.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Errors wrapped by what this package returns.
var (
	// ErrNotRegular: the path is a FIFO, a device, a socket (or, for
	// ReadFile, a directory).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: more bytes than the limit.
	ErrTooLarge = errors.New("larger than memdoctor reads")
)

// Limits for what memdoctor reads in one piece.
const (
	// ProcFile bounds one kernel file (a huge process' smaps is a few MiB).
	ProcFile = 64 << 20
	// Config bounds a configuration, credential or lint input file.
	Config = 16 << 20
	// Archive bounds a capture archive or one decompressed cron file.
	Archive = 512 << 20
)

// Open opens path for reading, refusing anything but a regular file or a
// directory without blocking.
func Open(path string) (*os.File, error) {
	fd, _, err := openFD(path)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openFD opens path without blocking and checks its kind: a regular file
// or a directory (st says which), anything else refused.
func openFD(path string) (int, *unix.Stat_t, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		// A socket cannot be opened (ENXIO): name what it is.
		var st unix.Stat_t
		if unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			return -1, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is a socket", ErrNotRegular)}
		}
		return -1, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if k := st.Mode & unix.S_IFMT; k != unix.S_IFREG && k != unix.S_IFDIR {
		_ = unix.Close(fd)
		return -1, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind(uint32(k)))}
	}
	return fd, &st, nil
}

func kind(k uint32) string {
	switch k {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFDIR:
		return "a directory"
	}
	return "not a regular file"
}

// ReadFile reads a regular file of at most limit bytes. It costs open,
// fstat, the reads and close, and nothing else: the descriptor never
// becomes an *os.File (which would add fcntl, a second fstat and the
// poller's registration and removal, a third of the cost of a small cgroup
// or proc file), and the first read asks for the whole file when its size
// is known. A file that says it is empty or a page (proc and cgroup files)
// is read into a reused buffer and returned as a copy of its length: a
// page allocated for each, grown by doubling for a process' maps, was half
// of what check allocated.
func ReadFile(path string, limit int64) ([]byte, error) {
	return readFile(path, limit, nil)
}

// ReadFileInto is ReadFile reading into buf (from its start, whatever it
// held), grown as the file needs up to limit bytes: the result is buf or
// a larger copy of it, so a caller that hands the same buffer to every
// read parses each file before the next read and keeps nothing of it. A
// nil buf reads as ReadFile does.
func ReadFileInto(path string, limit int64, buf []byte) ([]byte, error) {
	return readFile(path, limit, buf)
}

func readFile(path string, limit int64, into []byte) ([]byte, error) {
	fd, st, err := openFD(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(fd) }() // read-only
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it is a directory", ErrNotRegular)}
	}
	if st.Size > 4096 { // its size is known: the first read asks for all of it
		want := min(st.Size+1, limit+1) // one more byte: the end is seen in the first read
		if int64(cap(into)) < want {
			into = make([]byte, 0, want)
		}
		return readFD(fd, path, into[:0], limit, 0)
	}
	if into != nil {
		return readFD(fd, path, into[:0], limit, 4096)
	}
	bp := readBufs.Get().(*[]byte)
	rb, err := readFD(fd, path, (*bp)[:0], limit, 4096)
	var out []byte
	if err == nil {
		out = append(make([]byte, 0, len(rb)), rb...)
	}
	if cap(rb) > cap(*bp) && cap(rb) <= maxPooledRead {
		*bp = rb[:0] // grown: keep the larger one (a copy was returned)
	}
	readBufs.Put(bp)
	return out, err
}

// readBufs are ReadFile's buffers for files of unknown size; one grown
// past maxPooledRead is not kept.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledRead = 1 << 20

// readFD reads fd to its end into buf (grown as needed), at most limit
// bytes: never more than limit+1 in all, whatever buf's capacity, so a
// buffer handed in larger than the limit does not let a file past it
// through. With step > 0 it asks for step bytes first and then for as
// many as it holds, as a buffer of step bytes grown by doubling would: a
// sysctl file's read allocates and clears in the kernel as many bytes as
// asked, which a large kept buffer would make it do at every read.
func readFD(fd int, path string, buf []byte, limit int64, step int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d MiB", ErrTooLarge, limit>>20)}
			}
			// Double, from 4 KiB at least (append grows a large buffer
			// by a quarter: a 30 KB slabinfo was five buffers), and
			// never past the limit's one byte more.
			grow := min(int64(max(len(buf), 4096)), limit+1-int64(len(buf)))
			buf = slices.Grow(buf, int(grow))
		}
		end := min(int64(cap(buf)), limit+1)
		if step > 0 {
			end = min(end, int64(len(buf)+max(step, len(buf))))
		}
		n, err := unix.Read(fd, buf[len(buf):end])
		if err == unix.EINTR { //nolint:errorlint // raw errno from the syscall
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			break
		}
	}
	if int64(len(buf)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d MiB", ErrTooLarge, limit>>20)}
	}
	return buf, nil
}

// smallBuf is the first read of ReadSmall: a cgroup file's whole content
// (memory.stat is under 2 KiB).
const smallBuf = 4096

// ReadSmall reads a small kernel file (a cgroup's memory.* file, a
// sysfs attribute) of at most limit bytes in three system calls: open,
// one read, close. Such files are generated whole by a single show
// callback, so a read that returns less than was asked is the whole file.
// The file's kind is checked (fstat) only when the first read does not
// settle it: empty, an error, or a full buffer (a larger file, which is
// then read on as ReadFile does), on the same descriptor (ReadOnceInto).
// A FIFO, device or socket is still refused, and an open never blocks.
func ReadSmall(path string, limit int64) ([]byte, error) {
	// Read on the stack and copied out at its size (see Dir.ReadSmall);
	// never returned as read, which would put the buffer on the heap.
	var stack [smallBuf]byte
	b, err := ReadOnceInto(path, limit, stack[:0])
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// onceRead is the first read of ReadOnceInto: a process' status, a
// sysctl or a sysfs attribute whole (a sysctl's read makes the kernel
// allocate and clear as many bytes as asked: no more than a page).
const onceRead = 4096

// ReadOnceInto is ReadFileInto for a kernel file generated whole at its
// first read (a single_open proc file such as a process' status,
// smaps_rollup or cgroup, meminfo, a sysctl, a sysfs or cgroup
// attribute): a first read that returns less than it asked for is the
// whole file, so the file costs open, read and close (ReadSmall reads
// through it).
// Otherwise (a full first read, an error, nothing) its kind is checked
// on the same descriptor, as ReadFileInto checks it, before anything more
// is read or returned: what is not a regular file is refused, and the
// file is opened once whatever it holds. For paths a process cannot
// place a FIFO or device at (proc and sys by name, never through a
// process' root, cwd or fd links), where ReadFileInto's fstat of every
// file is two system calls in five with the read of the end.
func ReadOnceInto(path string, limit int64, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return readFile(path, limit, buf) // the same error, a socket named
	}
	if cap(buf) < onceRead {
		buf = make([]byte, 0, max(onceRead, cap(buf)))
	}
	want := int(min(int64(onceRead), limit+1))
	n, err := unix.Read(fd, buf[:want])
	for err == unix.EINTR { //nolint:errorlint // raw errno from the syscall
		n, err = unix.Read(fd, buf[:want])
	}
	if err == nil && n > 0 && n < want {
		_ = unix.Close(fd) // read-only
		return buf[:n], nil
	}
	// Not settled (an error, nothing, or a full first read): its kind is
	// checked on the same descriptor, never a second open of the file.
	defer func() { _ = unix.Close(fd) }() // read-only
	var st unix.Stat_t
	if serr := unix.Fstat(fd, &st); serr != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: serr}
	}
	switch k := st.Mode & unix.S_IFMT; {
	case k == unix.S_IFDIR:
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it is a directory", ErrNotRegular)}
	case k != unix.S_IFREG:
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind(uint32(k)))}
	case err != nil:
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	case n <= 0:
		return buf[:0], nil
	}
	// A full first read: a larger file, read on.
	return readFD(fd, path, buf[:n], limit, onceRead)
}

// ReadAll reads r to its end, failing with ErrTooLarge past limit bytes.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return b, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %d MiB", ErrTooLarge, limit>>20)
	}
	return b, nil
}

// DirFS is an fs.FS over a directory tree, as os.DirFS, whose opens never
// block and refuse what is not a regular file or a directory, and whose
// ReadFile is bounded.
type DirFS struct {
	root  string
	limit int64
	// base is root cleaned, and "" unless NewDirFS made the DirFS: a
	// valid name is clean, so base + "/" + name is the joined path,
	// cleaned without a pass over it (check opens some 250 files).
	base string
}

// NewDirFS returns a DirFS over root reading at most limit bytes a file.
func NewDirFS(root string, limit int64) DirFS {
	d := DirFS{root: root, limit: limit}
	if root != "" {
		d.base = filepath.Clean(root)
	}
	return d
}

// Root is the directory the tree is read from.
func (d DirFS) Root() string { return d.root }

func (d DirFS) join(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	switch {
	case filepath.Separator != '/' || name == "." || d.base == "" || d.base == ".":
		return filepath.Join(d.root, filepath.FromSlash(name)), nil
	case d.base == "/":
		return "/" + name, nil
	}
	return d.base + "/" + name, nil
}

func rename(err error, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = name
	}
	return err
}

// Open implements fs.FS.
func (d DirFS) Open(name string) (fs.File, error) {
	p, err := d.join("open", name)
	if err != nil {
		return nil, err
	}
	f, err := Open(p)
	if err != nil {
		return nil, rename(err, name)
	}
	return f, nil
}

// ReadFile implements fs.ReadFileFS.
func (d DirFS) ReadFile(name string) ([]byte, error) {
	p, err := d.join("read", name)
	if err != nil {
		return nil, err
	}
	b, err := ReadFile(p, d.limit)
	return b, rename(err, name)
}

// ReadFileInto reads a file as ReadFile does, into buf (see the function
// ReadFileInto).
func (d DirFS) ReadFileInto(name string, buf []byte) ([]byte, error) {
	p, err := d.join("read", name)
	if err != nil {
		return nil, err
	}
	b, err := ReadFileInto(p, d.limit, buf)
	return b, rename(err, name)
}

// ReadOnceInto reads a kernel file generated whole at its first read (see
// the function ReadOnceInto) into buf.
func (d DirFS) ReadOnceInto(name string, buf []byte) ([]byte, error) {
	p, err := d.join("read", name)
	if err != nil {
		return nil, err
	}
	b, err := ReadOnceInto(p, d.limit, buf)
	return b, rename(err, name)
}

// ReadSmall reads a small kernel file (see the function ReadSmall).
func (d DirFS) ReadSmall(name string) ([]byte, error) {
	p, err := d.join("read", name)
	if err != nil {
		return nil, err
	}
	b, err := ReadSmall(p, d.limit)
	return b, rename(err, name)
}

// ReadDir implements fs.ReadDirFS.
func (d DirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := d.join("readdir", name)
	if err != nil {
		return nil, err
	}
	e, err := os.ReadDir(p)
	return e, rename(err, name)
}

// Stat implements fs.StatFS.
func (d DirFS) Stat(name string) (fs.FileInfo, error) {
	p, err := d.join("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	return fi, rename(err, name)
}

// ReadLink implements fs.ReadLinkFS.
func (d DirFS) ReadLink(name string) (string, error) {
	p, err := d.join("readlink", name)
	if err != nil {
		return "", err
	}
	s, err := os.Readlink(p)
	return s, rename(err, name)
}

// Lstat implements fs.ReadLinkFS.
func (d DirFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := d.join("lstat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(p)
	return fi, rename(err, name)
}

var _ fs.ReadLinkFS = DirFS{}
