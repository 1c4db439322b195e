package safeio

import (
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Dir is an open directory whose files are read relative to it: one path
// walk for the directory, none for each file in it (a cgroup's memory.*
// files, its subdirectories).
type Dir struct {
	fd    int
	path  string // as given, for errors
	full  string // on disk, for the fallback
	limit int64
}

// OpenDir opens a directory of the tree.
func (d DirFS) OpenDir(name string) (*Dir, error) {
	p, err := d.join("open", name)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &Dir{fd: fd, path: name, full: p, limit: d.limit}, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// ReadSmall reads a small file of the directory as the function ReadSmall
// does, opened relative to it: openat, read and close.
func (d *Dir) ReadSmall(file string) ([]byte, error) {
	fd, err := unix.Openat(d.fd, file, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NOFOLLOW, 0)
	switch err { //nolint:errorlint // a raw errno from the syscall, never wrapped
	case nil:
		// Read on the stack and copied out at its size: a cgroup file is
		// some 10 to 2,000 bytes, a buffer of smallBuf each was most of it.
		var stack [smallBuf]byte
		buf := stack[:min(smallBuf, d.limit+1)]
		n, rerr := unix.Read(fd, buf)
		for rerr == unix.EINTR { //nolint:errorlint // raw errno from the syscall
			n, rerr = unix.Read(fd, buf)
		}
		_ = unix.Close(fd) // read-only
		if rerr == nil && n > 0 && n < len(buf) {
			return append([]byte(nil), buf[:n]...), nil
		}
	case unix.ENOENT: //nolint:errorlint // raw errno from the syscall
		return nil, &fs.PathError{Op: "open", Path: d.path + "/" + file, Err: fs.ErrNotExist}
	}
	// Anything unusual (a link, an empty or large file, an error) by the
	// checked path.
	b, err := ReadFile(filepath.Join(d.full, file), d.limit)
	return b, rename(err, d.path+"/"+file)
}
