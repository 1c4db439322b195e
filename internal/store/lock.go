package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// ErrLocked is wrapped when another process writes the store: a store has
// one writer at a time (the recorder, or an ingest). Readers never lock.
var ErrLocked = errors.New("store in use by another writer")

// ErrLinked is wrapped when a writer is given a store through a symbolic
// link, or a store file that has more than one name (hard links): each
// name would have a lock of its own, and two writers would write one
// store.
var ErrLinked = errors.New("store reached through a link")

// Lock is the exclusive writer's lock of a store: an flock(2) on the file
// "<store>.lock" beside it, held as long as the Lock is open. The file names
// its holder (pid, command, since when) for the writer that is refused; it
// is left in place when released, so that every writer locks the same
// inode.
//
// The lock is the store file's (its device and inode), not its name's: a
// writer is refused a store whose path is a symbolic link or whose file has
// more than one hard link, so a store has exactly one name and one lock
// file beside it, whatever path (through linked or bind-mounted
// directories) leads there. The lock file itself must be a regular file
// with one name: a link planted in its place is never followed.
type Lock struct {
	f    *os.File
	path string
}

// LockPath returns the lock file of the store at path.
func LockPath(path string) string { return path + ".lock" }

// AcquireLock takes the writer's lock of the store at path at once, or
// fails with an error wrapping ErrLocked that says who holds it, or
// ErrLinked for a store reached through a link. The caller passes it to
// Open in Options.Lock to keep it across reopens.
func AcquireLock(path string) (*Lock, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("lock store %s: %w", path, err)
	}
	if err := singleName(abs); err != nil {
		return nil, err
	}
	lp := LockPath(abs)
	// O_NOFOLLOW: a symbolic link in the lock file's place (to /etc/shadow,
	// say) would otherwise be followed and the file it names truncated.
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o640)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: lock file %s of store %s is a symbolic link: remove it (memdoctor creates its own)", ErrLinked, lp, abs)
	}
	if err != nil {
		return nil, fmt.Errorf("lock store %s: %w", abs, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock store %s: %w", abs, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 1 {
		_ = f.Close() // never locked
		return nil, fmt.Errorf("%w: lock file %s of store %s is not a regular file with one name (%d links): remove it (memdoctor creates its own)",
			ErrLinked, lp, abs, st.Nlink)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		who := lockHolder(f)
		_ = f.Close() // never held
		return nil, fmt.Errorf("%w: %s is being written by %s (lock file %s)", ErrLocked, abs, who, lp)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock store %s: %w", abs, err)
	}
	// Once more under the lock: a link made between the first look and the
	// lock would give the store a second lock file.
	if err := singleName(abs); err != nil {
		_ = f.Close() // releases the lock
		return nil, err
	}
	// Name the holder. Only the program and its subcommand: the rest of
	// the command line may hold credentials (URLs to scrape).
	info := fmt.Sprintf("pid %d\ncommand %s\nsince %s\n", os.Getpid(), commandName(os.Args), time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info), 0) // the lock holds without it; the refused writer then asks /proc/locks
	}
	return &Lock{f: f, path: lp}, nil
}

// singleName refuses a store path that is a symbolic link, a file with
// more than one hard link, or not a regular file. A path that does not
// exist yet names a new store.
func singleName(abs string) error {
	fi, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lock store %s: %w", abs, err)
	}
	switch m := fi.Mode(); {
	case m&os.ModeSymlink != 0:
		dest, _ := filepath.EvalSymlinks(abs)
		if dest == "" {
			dest, _ = os.Readlink(abs)
		}
		return fmt.Errorf("%w: %s is a symbolic link to %s: give the store's own path (--db %s), so that every writer locks the same file",
			ErrLinked, abs, dest, dest)
	case !m.IsRegular():
		return fmt.Errorf("open store %s: not a regular file (%s): a store is a file; name a new or existing store file", abs, m.Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("%w: %s has %d hard links (inode %d): through another name a second writer would take a lock of its own; keep one name (find the others with `find / -xdev -samefile %s`) or copy the store",
			ErrLinked, abs, st.Nlink, st.Ino, abs)
	}
	return nil
}

// Release gives the lock up. Releasing a nil or released Lock does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}

// commandName is the program's base name and its subcommands (the
// arguments before the first flag).
func commandName(args []string) string {
	if len(args) == 0 {
		return "?"
	}
	parts := []string{filepath.Base(args[0])}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") || strings.ContainsAny(a, "/:=@") || len(parts) == 3 {
			break
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// lockHolder describes the holder of the lock on f: from the lock file's
// own text, checked against the kernel's list of flocks (/proc/locks),
// which alone names the pid when the holder has not written the file yet.
func lockHolder(f *os.File) string {
	var pid, command, since string
	if b, err := os.ReadFile(f.Name()); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "pid":
				pid = v
			case "command":
				command = v
			case "since":
				since = v
			}
		}
	}
	kpid := flockPid(f)
	if kpid != "" && kpid != pid {
		// The file is stale or not written yet: the kernel knows better.
		pid, since = kpid, ""
		command = procComm(kpid)
	}
	if pid == "" {
		return "another process (its pid could not be found)"
	}
	s := "pid " + pid
	var extra []string
	if command != "" {
		extra = append(extra, command)
	}
	if since != "" {
		extra = append(extra, "since "+since)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// flockPid finds the pid holding an flock on f's inode in /proc/locks, or "".
func flockPid(f *os.File) string {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return ""
	}
	locks, err := procfs.Live().Locks()
	if err != nil {
		return ""
	}
	for _, l := range locks {
		if l.Class == "FLOCK" && !l.Blocked && l.Inode == st.Ino && l.Major == unixMajor(uint64(st.Dev)) && l.Minor == unixMinor(uint64(st.Dev)) {
			return strconv.Itoa(l.PID)
		}
	}
	return ""
}

func unixMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func unixMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }

// procComm is the short command name of pid, or "".
func procComm(pid string) string {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return ""
	}
	comm, err := procfs.Live().ProcComm(n)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(comm)
}
