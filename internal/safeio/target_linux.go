//go:build linux

package safeio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Info identifies an opened file and its owner.
type Info struct {
	FileID
	UID uint32
	// CtimeNS is its inode's change time, which no one but the kernel
	// sets (a file rewritten in place, its modification time put back,
	// still shows).
	CtimeNS int64
}

// OpenFile opens a regular file that a target process names or maps (a
// library, a debug file its .gnu_debuglink names, /proc/PID/map_files/…):
// the one way to open such a file. The open never blocks (O_NONBLOCK: a
// FIFO put in the library's place is refused, not waited on), the opened
// file must be a regular file of at most maxSize bytes. Links are followed
// (map_files entries are links); OpenInRoot follows none.
func OpenFile(path string, maxSize int64) (*os.File, Info, error) {
	fd, info, err := OpenFileFD(path, maxSize)
	return asFile(fd, path, info, err)
}

// OpenFileFD is OpenFile's descriptor, never made an *os.File (which asks
// for the descriptor's flags three times) and left O_NONBLOCK, which a
// regular file's reads ignore: for a caller that reads with pread and
// closes it itself (the objects check reads the allocator of).
func OpenFileFD(path string, maxSize int64) (int, Info, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return -1, Info{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return checked(fd, path, maxSize)
}

// OpenInRoot opens name, a path as a process sees it (absolute or not),
// inside root, the process' root directory (/proc/PID/root): resolved as
// if root were "/" (RESOLVE_IN_ROOT), with no symbolic link followed
// anywhere on the way, magic links included, and never blocking. The
// opened file must be a regular file of at most maxSize bytes.
func OpenInRoot(root, name string, maxSize int64) (*os.File, Info, error) {
	fd, info, err := OpenInRootFD(root, name, maxSize)
	return asFile(fd, "/"+strings.TrimLeft(name, "/"), info, err)
}

// OpenInRootFD is OpenInRoot's descriptor, as OpenFileFD is OpenFile's.
func OpenInRootFD(root, name string, maxSize int64) (int, Info, error) {
	name = strings.TrimLeft(name, "/")
	if name == "" {
		return -1, Info{}, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	dir, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, Info{}, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { _ = unix.Close(dir) }() // read-only
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	for {
		fd, err = unix.Openat2(dir, name, &how)
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			break // EAGAIN: a rename raced the lookup; ask again
		}
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = fmt.Errorf("%w: a symbolic link on the way", ErrNotRegular)
		}
		return -1, Info{}, &fs.PathError{Op: "open", Path: "/" + name, Err: err}
	}
	return checked(fd, "/"+name, maxSize)
}

// checked keeps fd if it is a regular file of at most maxSize bytes.
func checked(fd int, path string, maxSize int64) (int, Info, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, Info{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if k := st.Mode & unix.S_IFMT; k != unix.S_IFREG {
		_ = unix.Close(fd)
		return -1, Info{}, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind(k))}
	}
	if st.Size > maxSize {
		_ = unix.Close(fd)
		// Not its size: the file may be one the caller may not read.
		return -1, Info{}, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: more than %d MiB", ErrTooLarge, maxSize>>20)}
	}
	return fd, Info{FileID: idOf(&st), UID: st.Uid, CtimeNS: st.Ctim.Nano()}, nil
}

// asFile makes an opened regular file an *os.File of ordinary blocking
// reads.
func asFile(fd int, path string, info Info, err error) (*os.File, Info, error) {
	if err != nil {
		return nil, Info{}, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, Info{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), info, nil
}
