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
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		// A socket cannot be opened (ENXIO): name what it is.
		var st unix.Stat_t
		if unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is a socket", ErrNotRegular)}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if k := st.Mode & unix.S_IFMT; k != unix.S_IFREG && k != unix.S_IFDIR {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind(uint32(k)))}
	}
	return os.NewFile(uintptr(fd), path), nil
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

// ReadFile reads a regular file of at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it is a directory", ErrNotRegular)}
	}
	b, err := ReadAll(f, limit)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
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
}

// NewDirFS returns a DirFS over root reading at most limit bytes a file.
func NewDirFS(root string, limit int64) DirFS { return DirFS{root: root, limit: limit} }

func (d DirFS) join(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return filepath.Join(d.root, filepath.FromSlash(name)), nil
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
