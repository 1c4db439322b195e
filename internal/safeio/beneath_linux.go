//go:build linux

package safeio

import (
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// openBeneath opens name, a slash-separated path relative to the
// directory root, without following a symbolic link anywhere on the way:
// each component is opened relative to the one before with O_NOFOLLOW,
// so a link planted in the tree (pointing out of it, or anywhere) makes
// the open fail instead of being followed. dir asks for a directory; else
// only a regular file is accepted, and the open never blocks.
func openBeneath(root, name string, dir bool) (int, *unix.Stat_t, error) {
	if !fs.ValidPath(name) || name == "." {
		return -1, nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	parts := strings.Split(name, "/")
	for i, c := range parts {
		flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY
		if i < len(parts)-1 || dir {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(fd, c, flags, 0)
		_ = unix.Close(fd) // read-only
		if err != nil {
			if err == unix.ELOOP || err == unix.ENOTDIR { //nolint:errorlint // raw errno from the syscall
				err = fmt.Errorf("%w: a symbolic link or not a directory on the way", ErrNotRegular)
			}
			return -1, nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		fd = next
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if k := st.Mode & unix.S_IFMT; (dir && k != unix.S_IFDIR) || (!dir && k != unix.S_IFREG) {
		_ = unix.Close(fd)
		return -1, nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind(uint32(k)))}
	}
	return fd, &st, nil
}

// OpenBeneath opens the regular file name (slash-separated, relative to
// the directory root) following no symbolic link on the way; FileID
// identifies what was opened (to cache what was read from it).
func OpenBeneath(root, name string) (*os.File, FileID, error) {
	fd, st, err := openBeneath(root, name, false)
	if err != nil {
		return nil, FileID{}, err
	}
	return os.NewFile(uintptr(fd), name), idOf(st), nil
}

// FileID tells a file's version apart: device, inode, size and
// modification time (nanoseconds).
type FileID struct {
	Dev, Ino uint64
	Size     int64
	MtimeNS  int64
}

func idOf(st *unix.Stat_t) FileID {
	return FileID{Dev: st.Dev, Ino: st.Ino, Size: st.Size, MtimeNS: st.Mtim.Nano()}
}

// DirEntry is a name listed in a directory and its type as the file
// system gives it (unix.DT_*).
type DirEntry struct {
	Name string
	Type uint8
}

// Entry types of DirEntry.
const (
	TypeDir     = unix.DT_DIR
	TypeSymlink = unix.DT_LNK
	TypeRegular = unix.DT_REG
	TypeUnknown = unix.DT_UNKNOWN
)

// StatBeneath identifies the directory name below root (no symbolic link
// followed) without listing it.
func StatBeneath(root, name string) (FileID, error) {
	fd, st, err := openBeneath(root, name, true)
	if err != nil {
		return FileID{}, err
	}
	_ = unix.Close(fd) // read-only
	return idOf(st), nil
}

// ListBeneath lists the directory name below root (no symbolic link
// followed on the way), at most maxEntries entries (more is ErrTooLarge), with
// the directory's FileID. Links inside it are listed, never followed.
func ListBeneath(root, name string, maxEntries int) ([]DirEntry, FileID, error) {
	fd, st, err := openBeneath(root, name, true)
	if err != nil {
		return nil, FileID{}, err
	}
	defer func() { _ = unix.Close(fd) }() // read-only
	var out []DirEntry
	err = eachDirent(fd, make([]byte, 32<<10), func(s string, typ byte) error {
		if len(out) == maxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrTooLarge, maxEntries)
		}
		out = append(out, DirEntry{Name: strings.Clone(s), Type: typ})
		return nil
	})
	if err != nil {
		return nil, FileID{}, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return out, idOf(st), nil
}

// OpenDirBeneath opens the directory name below root (no symbolic link
// followed on the way) and keeps it open: names inside it are then
// resolved against that very directory, whatever is renamed or replaced on
// the way meanwhile.
func OpenDirBeneath(root, name string) (*os.File, FileID, error) {
	fd, st, err := openBeneath(root, name, true)
	if err != nil {
		return nil, FileID{}, err
	}
	return os.NewFile(uintptr(fd), name), idOf(st), nil
}
