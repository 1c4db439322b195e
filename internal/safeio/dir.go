package safeio

import (
	"bytes"
	"encoding/binary"
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
		buf := make([]byte, min(smallBuf, d.limit+1))
		n, rerr := unix.Read(fd, buf)
		for rerr == unix.EINTR { //nolint:errorlint // raw errno from the syscall
			n, rerr = unix.Read(fd, buf)
		}
		_ = unix.Close(fd) // read-only
		if rerr == nil && n > 0 && n < len(buf) {
			return buf[:n:n], nil
		}
	case unix.ENOENT: //nolint:errorlint // raw errno from the syscall
		return nil, &fs.PathError{Op: "open", Path: d.path + "/" + file, Err: fs.ErrNotExist}
	}
	// Anything unusual (a link, an empty or large file, an error) by the
	// checked path.
	b, err := ReadFile(filepath.Join(d.full, file), d.limit)
	return b, rename(err, d.path+"/"+file)
}

// SubDirs lists the names of the directory's subdirectories, in the order
// the file system gives them.
func (d *Dir) SubDirs() ([]string, error) {
	var out []string
	buf := make([]byte, 8192)
	if _, err := unix.Seek(d.fd, 0, 0); err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
	}
	for {
		n, err := unix.Getdents(d.fd, buf)
		if err == unix.EINTR { //nolint:errorlint // raw errno from the syscall
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		b := buf[:n]
		for len(b) >= 19 {
			// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ := b[18]
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if s := string(name); s != "." && s != ".." {
				switch typ {
				case unix.DT_DIR:
					out = append(out, s)
				case unix.DT_UNKNOWN: // file systems without d_type
					var st unix.Stat_t
					if unix.Fstatat(d.fd, s, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
						out = append(out, s)
					}
				}
			}
		}
	}
}
