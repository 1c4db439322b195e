//go:build linux

package safeio

import (
	"io/fs"

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
			out = append(out, s)
		case unix.DT_UNKNOWN: // file systems without d_type
			var st unix.Stat_t
			if unix.Fstatat(d.fd, s, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				out = append(out, s)
			}
		}
		return nil
	})
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
	}
	return out, nil
}
