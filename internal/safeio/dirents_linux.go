//go:build linux

package safeio

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// eachDirent calls fn with the name and d_type of every entry of the open
// directory fd but "." and "..", read with getdents64 into buf (from the
// directory's current offset). The name is a view of buf, valid until fn
// returns: one that is kept is copied (strings.Clone). An error from fn
// ends the listing and is returned; the listing's own error comes back as
// it is.
func eachDirent(fd int, buf []byte, fn func(name string, typ byte) error) error {
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR { //nolint:errorlint // raw errno from the syscall
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
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
			if s := unsafe.String(unsafe.SliceData(name), len(name)); len(name) > 0 && s != "." && s != ".." {
				if err := fn(s, typ); err != nil {
					return err
				}
			}
		}
	}
}
