package preload

// The requesting side of the protocol, for a process memdoctor does not
// trust (README.md, "Requests" and "A requester running as root"). Ask
// works as described below; ReadStats only reads, and checks what the
// process' user may read instead of becoming it (permission_linux.go).
//
// Everything the process controls is untrusted: the MEMDOCTOR_STATS path in
// its environment, every file and directory it can write, and each answer
// line (any program can map a file named like the library). So:
//
//   - The file work runs on one OS thread that takes the process' user,
//     group and supplementary groups (setgroups, setresgid, setresuid on that
//     thread only: other threads keep memdoctor's credentials, and the
//     thread ends with the request, never serving other goroutines). Root
//     thus creates, reads and removes only what the process could itself;
//     the request file it creates belongs to the process' user. (A
//     credential change on any thread makes the kernel mark the whole
//     process not dumpable, as for any set-user-ID change: no core dumps
//     of memdoctor afterwards, which a root tool can do without.)
//   - The stats directory is opened once, as that user, relative to
//     /proc/PID/root (RESOLVE_IN_ROOT: the process' own root, absolute
//     symlinks included) or /proc/PID/cwd (RESOLVE_BENEATH: a relative path
//     may not climb out of it), never through a /proc magic link. Every
//     file is then opened by a single name relative to that directory
//     handle, never following a symlink (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS;
//     O_NOFOLLOW on kernels before 5.6, where a symlink anywhere in the
//     directory path is refused instead).
//   - Files are opened O_NONBLOCK, must be regular files of the expected
//     owner and below a size bound; a FIFO, device or socket is refused.
//   - The "xml" field of an answer is not a path memdoctor opens: it must
//     name PATH.malloc_info.xml, the only dump memdoctor reads.
//   - Every step waits under the caller's context: a file system that does
//     not answer (a stuck mount) leaves the thread behind, not the command.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// forceNoOpenat2 makes the O_NOFOLLOW walk stand in for openat2 (tests).
var forceNoOpenat2 bool

// Ask sends "ACTION ID" to the process writing t.StatsPath and returns its
// answer: the stats line and (unless SkipXML) the malloc_info dump. It
// returns ErrNoAnswer when ctx ends before the library took the request (the
// request is then withdrawn), or ctx's error when it ends later.
func Ask(ctx context.Context, t Target, action string) (*Response, error) {
	if action == "" {
		action = "info"
	}
	if action != "info" && action != "trim" {
		return nil, fmt.Errorf("request %q: want info or trim", action)
	}
	sp := t.StatsPath
	dir, name := path.Split(sp)
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("%w: %q does not name a file", ErrUnsafe, sp)
	}
	if t.Poll <= 0 {
		t.Poll = 20 * time.Millisecond
	}
	anchor, rel, resolve, err := anchorFor(t.PID, dir)
	if err != nil {
		return nil, err
	}
	w, err := startWorker(t.Cred)
	if err != nil {
		_ = unix.Close(anchor)
		return nil, err
	}
	defer w.stop()
	var dfd int
	err = w.do(ctx, func() error {
		defer func() { _ = unix.Close(anchor) }()
		var err error
		dfd, err = openDir(anchor, rel, resolve)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("the directory of %s: %w", sp, err)
	}
	// Closed by the worker when it is done with everything queued.
	defer w.later(func() { _ = unix.Close(dfd) })

	req := name + ".request"
	id := fmt.Sprintf("md%d-%d", os.Getpid(), time.Now().UnixNano())
	err = w.do(ctx, func() error {
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, req, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			return fmt.Errorf("%w: %s exists: another request is pending, or no process with the library takes requests for %s", ErrPending, sp+".request", sp)
		}
		return sendRequest(dfd, req, id, action)
	})
	if err != nil {
		if t.Cred != nil && errors.Is(err, unix.EACCES) {
			err = fmt.Errorf("%w (as the process' user, uid %d: memdoctor creates nothing it could not create itself)", err, t.Cred.UID)
		}
		return nil, err
	}
	for {
		var gone bool
		err := w.do(ctx, func() error {
			var st unix.Stat_t
			err := unix.Fstatat(dfd, req, &st, unix.AT_SYMLINK_NOFOLLOW)
			gone = errors.Is(err, unix.ENOENT)
			if err != nil && !gone {
				return fmt.Errorf("%s.request: %w", sp, err)
			}
			return nil
		})
		if err == nil && gone {
			break
		}
		if err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(t.Poll):
				continue
			}
		}
		withdraw(w, dfd, req, id)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w from the process writing %s (%w): the library looks for requests every second, and stops after an error it prints on the process' stderr as \"memdoctor-preload: ...\"",
				ErrNoAnswer, sp, ctx.Err())
		}
		return nil, err
	}

	var data []byte
	err = w.do(ctx, func() error {
		var err error
		data, err = readChecked(dfd, name, t.Owners, true, answerTail, true, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sp, err)
	}
	ev, err := findAnswer(data, id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sp, err)
	}
	if t.OwnPID > 0 && ev.PID != t.OwnPID {
		return nil, fmt.Errorf("%w: %s: request %s was answered by pid %d, not %d (processes share this file and its requests: put %%p in MEMDOCTOR_STATS)",
			ErrUnsafe, sp, id, ev.PID, t.OwnPID)
	}
	if ev.Event == "error" {
		msg := ev.Error // the process' words: quoted (no terminal escapes), and cut
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return nil, fmt.Errorf("request %s: the library answered with an error: %q", id, msg)
	}
	want := sp + ".malloc_info.xml"
	if ev.XML != "" && ev.XML != want {
		return nil, fmt.Errorf("%w: the answer to request %s names %q as its malloc_info dump, not %q next to the stats file; only that one is read",
			ErrUnsafe, id, ev.XML, want)
	}
	res := &Response{Event: *ev}
	if t.SkipXML {
		return res, nil
	}
	err = w.do(ctx, func() error {
		var err error
		res.XML, err = readChecked(dfd, name+".malloc_info.xml", t.Owners, false, MaxXML, false, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", want, err)
	}
	return res, nil
}

// ReadStats reads the last limit bytes of the stats file t.StatsPath (whole
// lines) the way Ask reads answers: through the process' root or working
// directory, without following a symlink in the file name, never opening
// what is not a regular file, and only a file owned by one of t.Owners (or
// root). Unlike Ask it does not take the process' user: it only reads, so
// it checks instead that t.Cred could read the file itself (permission.go)
// and needs no set-user-ID system call (the recorder's unit forbids them).
func ReadStats(ctx context.Context, t Target, limit int64) ([]byte, error) {
	dir, name := path.Split(t.StatsPath)
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("%w: %q does not name a file", ErrUnsafe, t.StatsPath)
	}
	anchor, rel, resolve, err := anchorFor(t.PID, dir)
	if err != nil {
		return nil, err
	}
	w, err := startWorker(nil)
	if err != nil {
		_ = unix.Close(anchor)
		return nil, err
	}
	defer w.stop()
	var data []byte
	err = w.do(ctx, func() error {
		defer func() { _ = unix.Close(anchor) }()
		dfd, err := openDir(anchor, rel, resolve)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Close(dfd) }()
		if err := searchable(anchor, dfd, t.Cred); err != nil {
			return err
		}
		data, err = readChecked(dfd, name, t.Owners, true, limit, true, t.Cred)
		return err
	})
	return data, err
}

// anchorFor opens the directory the stats directory is resolved from: the
// process' root or working directory, or "/" and "." for memdoctor's own
// view. rel is dir relative to it.
func anchorFor(pid int, dir string) (fd int, rel string, resolve uint64, err error) {
	rel = strings.TrimLeft(dir, "/")
	abs := strings.HasPrefix(dir, "/")
	if rel == "" {
		rel = "."
	}
	var from string
	switch {
	case pid > 0 && abs:
		from, resolve = "/proc/"+strconv.Itoa(pid)+"/root", unix.RESOLVE_IN_ROOT
	case pid > 0:
		from, resolve = "/proc/"+strconv.Itoa(pid)+"/cwd", unix.RESOLVE_BENEATH
	case abs:
		from = "/"
	default:
		from = "."
	}
	// The magic link of /proc is followed here, as memdoctor (which may
	// look into the process); nothing below follows one.
	fd, err = unix.Open(from, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", 0, fmt.Errorf("opening %s: %w", from, err)
	}
	return fd, rel, resolve, nil
}

// openDir opens rel below anchor as a directory handle (O_PATH).
func openDir(anchor int, rel string, resolve uint64) (int, error) {
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	if !forceNoOpenat2 {
		fd, err := unix.Openat2(anchor, rel, &unix.OpenHow{Flags: flags, Resolve: resolve | unix.RESOLVE_NO_MAGICLINKS})
		if !errors.Is(err, unix.ENOSYS) {
			if errors.Is(err, unix.EXDEV) {
				err = fmt.Errorf("%w: %q leads out of the process' working directory", ErrUnsafe, rel)
			}
			return fd, err
		}
	}
	// Without openat2: one component at a time, never following a
	// symlink, never "..".
	fd, err := unix.Openat(anchor, ".", flags, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("%w: %q has a \"..\" (this kernel has no openat2 to resolve it safely)", ErrUnsafe, rel)
		}
		next, err := unix.Openat(fd, c, flags|unix.O_NOFOLLOW, 0)
		_ = unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				err = fmt.Errorf("%w: %q is not a directory (symlinks are not followed on kernels without openat2)", ErrUnsafe, c)
			}
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// openIn opens one name in directory dfd, never following a symlink and
// never blocking on a FIFO or device.
func openIn(dfd int, name string, flags int, mode uint32) (int, error) {
	if name == "" || strings.Contains(name, "/") || name == "." || name == ".." {
		return -1, fmt.Errorf("%w: %q is not a file name", ErrUnsafe, name)
	}
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY
	if !forceNoOpenat2 {
		how := &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		if flags&unix.O_CREAT != 0 {
			how.Mode = uint64(mode)
		}
		fd, err := unix.Openat2(dfd, name, how)
		if !errors.Is(err, unix.ENOSYS) {
			return fd, symlinkErr(name, err)
		}
	}
	fd, err := unix.Openat(dfd, name, flags, mode)
	return fd, symlinkErr(name, err)
}

func symlinkErr(name string, err error) error {
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("%w: %s is a symlink: not followed", ErrUnsafe, name)
	}
	return err
}

// sendRequest writes "ACTION ID\n" to a new temporary file and renames it
// to req without replacing anything there.
func sendRequest(dfd int, req, id, action string) error {
	tmp := req + ".tmp-" + id
	fd, err := openIn(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	line := []byte(action + " " + id + "\n")
	n, err := unix.Write(fd, line)
	if err == nil && n != len(line) {
		err = unix.EIO
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat2(dfd, tmp, dfd, req, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			// No RENAME_NOREPLACE on this file system: a link also
			// fails when req exists.
			if err = unix.Linkat(dfd, tmp, dfd, req, 0); err == nil {
				_ = unix.Unlinkat(dfd, tmp, 0)
			}
		}
		if errors.Is(err, unix.EEXIST) {
			err = fmt.Errorf("%w: %s appeared meanwhile", ErrPending, req)
		}
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("writing %s: %w", req, err)
	}
	return nil
}

// withdraw removes the request if it is still the one sent. It gives a
// stuck worker one second.
func withdraw(w *worker, dfd int, req, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = w.do(ctx, func() error {
		b, err := readChecked(dfd, req, nil, false, 256, false, nil)
		if err == nil && bytes.Contains(b, []byte(id)) {
			return unix.Unlinkat(dfd, req, 0)
		}
		return err
	})
}

// readChecked reads a regular file name in dfd: owned by one of owners
// (root too when rootOK; any owner when owners is empty), readable by as
// (when not nil: memdoctor reads it with its own credentials), at most
// limit bytes, or with tail its last limit bytes (from a line start).
func readChecked(dfd int, name string, owners []uint32, rootOK bool, limit int64, tail bool, as *Cred) ([]byte, error) {
	// Looked at first, so that a FIFO is not even opened (opening one
	// wakes a writer waiting on it); checked again on the open file.
	var st unix.Stat_t
	if strings.Contains(name, "/") {
		return nil, fmt.Errorf("%w: %q is not a file name", ErrUnsafe, name)
	}
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil, symlinkErr(name, unix.ELOOP)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is a %s, not a regular file", ErrUnsafe, name, fileType(st.Mode))
	}
	fd, err := openIn(dfd, name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(fd) }() // read only
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is a %s, not a regular file", ErrUnsafe, name, fileType(st.Mode))
	}
	if len(owners) > 0 && !slices.Contains(owners, st.Uid) && (!rootOK || st.Uid != 0) {
		return nil, fmt.Errorf("%w: %s belongs to uid %d, not to the process' user (uid %v)", ErrUnsafe, name, st.Uid, owners)
	}
	if err := mayReadFile(fd, &st, as); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	size, off := st.Size, int64(0)
	if size > limit {
		if !tail {
			return nil, fmt.Errorf("%w: %s has %d bytes, more than the %d read", ErrUnsafe, name, size, limit)
		}
		off = size - limit
	}
	buf := make([]byte, size-off)
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	buf = buf[:n]
	if off > 0 { // drop the partial first line
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return buf, nil
}

func fileType(m uint32) string {
	switch m & unix.S_IFMT {
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "special file"
}

// worker runs file work on one locked OS thread with the target's
// credentials. The thread is never unlocked: it ends with the worker, and
// its credentials with it.
type worker struct {
	jobs chan func()
}

func startWorker(c *Cred) (*worker, error) {
	w := &worker{jobs: make(chan func(), 4)}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: Go ends a thread whose goroutine exits locked.
		if c != nil {
			if err := becomeUser(c); err != nil {
				ready <- err
				return
			}
		}
		ready <- nil
		for f := range w.jobs {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

// becomeUser gives the calling thread (only) the user c. From root this
// also drops every capability of the thread.
func becomeUser(c *Cred) error {
	groups := make([]uint32, len(c.Groups))
	copy(groups, c.Groups)
	var p unsafe.Pointer
	if len(groups) > 0 {
		p = unsafe.Pointer(&groups[0])
	}
	// Raw system calls: the syscall package's Setuid and friends change
	// every thread of the process.
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
		return fmt.Errorf("acting as uid %d: setgroups: %w", c.UID, e)
	}
	runtime.KeepAlive(groups)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(c.GID), uintptr(c.GID), uintptr(c.GID)); e != 0 {
		return fmt.Errorf("acting as gid %d: setresgid: %w", c.GID, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(c.UID), uintptr(c.UID), uintptr(c.UID)); e != 0 {
		return fmt.Errorf("acting as uid %d: setresuid: %w", c.UID, e)
	}
	return nil
}

// do runs f on the worker and returns its error, or ctx's when ctx ends
// first (f may still run then; it only touches its own variables).
func (w *worker) do(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	select {
	case w.jobs <- func() { done <- f() }:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// later queues f without waiting (cleanup); dropped if the worker is stuck.
func (w *worker) later(f func()) {
	select {
	case w.jobs <- f:
	default:
	}
}

func (w *worker) stop() { close(w.jobs) }
