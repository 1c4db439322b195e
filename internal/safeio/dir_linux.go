//go:build linux

package safeio

import (
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"
)

// SubDirs lists the names of the directory's subdirectories, in the order
// the file system gives them.
func (d *Dir) SubDirs() ([]string, error) {
	var out []string
	buf := make([]byte, 8192)
	if _, err := unix.Seek(d.fd, 0, 0); err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
	}
	err := eachDirent(d.fd, buf, func(s string, typ byte) error {
		switch typ {
		case unix.DT_DIR:
			out = append(out, strings.Clone(s))
		case unix.DT_UNKNOWN: // file systems without d_type
			var st unix.Stat_t
			if unix.Fstatat(d.fd, s, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				out = append(out, strings.Clone(s))
			}
		}
		return nil
	})
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
	}
	return out, nil
}

// EachName calls fn with the name of every entry of the directory name but
// "." and "..", in the order the file system gives them: one getdents64
// buffer for the whole listing and nothing made for an entry fn passes
// over (os.ReadDir made and sorted an entry for each: a listing of /proc,
// or of a /tmp of hundreds of files for its hsperfdata_ directories). The
// name is valid until fn returns: fn copies (strings.Clone) what it keeps.
func (d DirFS) EachName(name string, fn func(entry string)) error {
	p, err := d.join("readdir", name)
	if err != nil {
		return err
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer func() { _ = unix.Close(fd) }() // read-only
	var buf [8192]byte
	if err := eachDirent(fd, buf[:], func(s string, _ byte) error { fn(s); return nil }); err != nil {
		return &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return nil
}
