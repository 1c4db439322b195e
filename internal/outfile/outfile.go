// Package outfile writes the files memdoctor is told to write (-o, --out)
// without harming what is already at that path.
//
// memdoctor runs as root, so a path given to it may name anything: a new
// file, a regular file to replace, /dev/null, a terminal, a FIFO a script
// reads from, or a device node. A new or regular file is written to a
// temporary file in the same directory and renamed over the name, so a
// reader never sees half of it and an interrupted write leaves the old
// file whole. Terminals, the null devices and FIFOs are written through,
// never replaced. Anything else (block devices, sockets, other character
// devices such as /dev/mem, directories) is refused. A symbolic link is
// followed only to a file in the directory it stands in; a link that leads
// elsewhere is refused rather than followed out of the directory the user
// named.
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrRefused is wrapped by every refusal to write to a path.
var ErrRefused = errors.New("refused")

// Write writes what fill produces to path, with permissions perm for a file
// it creates. fill gets a buffered writer; Write flushes it.
func Write(path string, perm os.FileMode, fill func(io.Writer) error) error {
	if path == "" {
		return fmt.Errorf("%w: no file named", ErrRefused)
	}
	target, through, err := plan(path)
	if err != nil {
		return err
	}
	if through {
		return writeThrough(path, fill)
	}
	return replace(target, perm, fill)
}

// WriteBytes is Write for data already in memory.
func WriteBytes(path string, perm os.FileMode, data []byte) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// plan decides how path is written: replaced (atomically, at target) or
// written through (an existing terminal, null device or FIFO).
func plan(path string) (target string, through bool, err error) {
	lfi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("writing %s: %w", path, err)
	}
	if lfi.Mode()&os.ModeSymlink == 0 {
		through, err := kindOK(path, lfi)
		return path, through, err
	}
	// A symbolic link: what does it lead to?
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A dangling link: creating its target would write wherever the
		// link points.
		dest, _ := os.Readlink(path)
		return "", false, fmt.Errorf("%w: %s is a symbolic link to %s, which does not exist: name a file, not a link", ErrRefused, path, dest)
	case err != nil:
		return "", false, fmt.Errorf("writing %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		// /dev/stdout and the like: the kind of what it leads to decides.
		through, err := kindOK(path, fi)
		return path, through, err
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false, fmt.Errorf("writing %s: %w", path, err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", false, fmt.Errorf("writing %s: %w", path, err)
	}
	if filepath.Dir(resolved) != dir {
		return "", false, fmt.Errorf("%w: %s is a symbolic link to %s, outside %s: name that file itself if it is the one to replace", ErrRefused, path, resolved, filepath.Dir(path))
	}
	return resolved, false, nil
}

// kindOK says whether an existing file of this kind is replaced (false) or
// written through (true), or refuses it.
func kindOK(path string, fi os.FileInfo) (through bool, err error) {
	m := fi.Mode()
	switch {
	case m.IsRegular():
		return false, nil
	case m.IsDir():
		return false, fmt.Errorf("%w: %s is a directory: name a file in it", ErrRefused, path)
	case m&os.ModeNamedPipe != 0:
		return true, nil
	case m&os.ModeCharDevice != 0:
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return false, fmt.Errorf("%w: %s is a character device", ErrRefused, path)
		}
		major, minor := unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)) // int32 on some systems
		if harmlessChar(major, minor) {
			return true, nil
		}
		return false, fmt.Errorf("%w: %s is a character device (%d:%d): memdoctor writes only to files, FIFOs, terminals and /dev/null", ErrRefused, path, major, minor)
	case m&os.ModeDevice != 0:
		return false, fmt.Errorf("%w: %s is a block device: memdoctor never writes to one", ErrRefused, path)
	case m&os.ModeSocket != 0:
		return false, fmt.Errorf("%w: %s is a socket: memdoctor writes only to files, FIFOs, terminals and /dev/null", ErrRefused, path)
	default:
		return false, fmt.Errorf("%w: %s is not a regular file (%s)", ErrRefused, path, m.Type())
	}
}

// harmlessChar: the character devices that a report may be written to
// (Documentation/admin-guide/devices.txt): /dev/null, /dev/zero, /dev/full,
// terminals (tty*, console, ptmx's slaves) and /dev/tty.
func harmlessChar(major, minor uint32) bool {
	switch {
	case major == 1 && (minor == 3 || minor == 5 || minor == 7):
		return true
	case major == 4: // virtual consoles and serial lines
		return true
	case major == 5 && (minor == 0 || minor == 1): // /dev/tty, /dev/console
		return true
	case major >= 136 && major <= 143: // Unix98 pty slaves (/dev/pts/N)
		return true
	}
	return false
}

// writeThrough writes into an existing terminal, null device or FIFO
// without creating, truncating or replacing it. A FIFO with no reader is
// refused rather than waited for.
func writeThrough(path string, fill func(io.Writer) error) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("%w: %s is a FIFO with no reader: start its reader first", ErrRefused, path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// Blocking writes from here on: a slow reader is waited for, as a
	// shell redirection would.
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	bw := bufio.NewWriterSize(f, 1<<20)
	werr := fill(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}

// replace writes a new file beside target and renames it over target.
func replace(target string, perm os.FileMode, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w (choose another place)", target, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	werr := fill(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), target)
	}
	if werr != nil {
		_ = os.Remove(f.Name()) // best effort: the write error is the one to report
		return fmt.Errorf("writing %s: %w", target, werr)
	}
	return nil
}
