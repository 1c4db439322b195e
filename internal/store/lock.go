package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrLocked is wrapped when another process writes the store: a store has
// one writer at a time (the recorder, or an ingest). Readers never lock.
var ErrLocked = errors.New("store in use by another writer")

// Lock is the exclusive writer's lock of a store: an flock(2) on the file
// "<store>.lock" beside it, held as long as the Lock is open. The file names
// its holder (pid, command, since when) for the writer that is refused; it
// is left in place when released, so that every writer locks the same
// inode.
type Lock struct {
	f    *os.File
	path string
}

// LockPath returns the lock file of the store at path.
func LockPath(path string) string { return path + ".lock" }

// AcquireLock takes the writer's lock of the store at path at once, or
// fails with an error wrapping ErrLocked that says who holds it. The
// caller passes it to Open in Options.Lock to keep it across reopens.
func AcquireLock(path string) (*Lock, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("lock store %s: %w", path, err)
	}
	lp := LockPath(abs)
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o640)
	if err != nil {
		return nil, fmt.Errorf("lock store %s: %w", abs, err)
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
	// Name the holder. Only the program and its subcommand: the rest of
	// the command line may hold credentials (URLs to scrape).
	info := fmt.Sprintf("pid %d\ncommand %s\nsince %s\n", os.Getpid(), commandName(os.Args), time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info), 0) // the lock holds without it; the refused writer then asks /proc/locks
	}
	return &Lock{f: f, path: lp}, nil
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
	lf, err := os.Open("/proc/locks")
	if err != nil {
		return ""
	}
	defer func() { _ = lf.Close() }() // read-only
	// e.g. "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; a blocked
	// waiter's line has "->" after the number.
	want := ":" + strconv.FormatUint(st.Ino, 10)
	dev := fmt.Sprintf("%02x:%02x", unixMajor(uint64(st.Dev)), unixMinor(uint64(st.Dev)))
	sc := bufio.NewScanner(lf)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 6 || fl[1] == "->" || fl[1] != "FLOCK" {
			continue
		}
		id := fl[5]
		if strings.HasSuffix(id, want) && strings.HasSuffix(id[:len(id)-len(want)], dev) {
			return fl[4]
		}
	}
	return ""
}

func unixMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func unixMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }

// procComm is the short command name of pid, or "".
func procComm(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
