//go:build linux

package safeio

import (
	"bytes"
	"encoding/binary"
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
