package procfs

// /proc/locks (fs/locks.c, lock_get_status), 2.6+: one line a lock, and
// one a process blocked waiting for it ("->" after the number):
//
//	1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF
//	1: -> FLOCK  ADVISORY  WRITE 1240 fd:01:5678 0 EOF
//	2: POSIX  ADVISORY  READ 5678 08:02:1234 128 128
//	3: OFDLCK ADVISORY  READ -1 00:05:1234 0 EOF
//
// The file is named by its device's major and minor (hex) and its inode
// (decimal), or "<none>:0" for a lock without an inode. The pid is the holder's in the reader's pid namespace (0 when
// it is not visible there, -1 for open file description locks).

import "strings"

// Lock is one line of proc/locks.
type Lock struct {
	Class   string // FLOCK, POSIX, OFDLCK, LEASE, DELEG...
	Blocked bool   // a waiter's line ("->"), not a lock held
	PID     int
	// Major and Minor are the file's device, Inode its inode.
	Major, Minor uint64
	Inode        uint64
}

// Locks reads proc/locks.
func (f FS) Locks() ([]Lock, error) {
	const name = "proc/locks"
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return ParseLocks(data, name)
}

// ParseLocks parses proc/locks.
func ParseLocks(data []byte, file string) ([]Lock, error) {
	s := string(data)
	out := make([]Lock, 0, lineHint(s, 32))
	for line, t := range lines(s) {
		f := strings.Fields(t)
		var l Lock
		if len(f) > 1 && f[1] == "->" {
			l.Blocked = true
			f = append(f[:1], f[2:]...)
		}
		if len(f) < 6 {
			return nil, perr(file, line, "bad lock %s", quote(t))
		}
		l.Class = f[1]
		pid, ok := atoi(f[4])
		if !ok || pid < -1 || pid > 1<<31 {
			return nil, perr(file, line, "bad pid in %s", quote(t))
		}
		l.PID = int(pid)
		if strings.HasPrefix(f[5], "<none>") {
			out = append(out, l) // no file: device and inode 0
			continue
		}
		maj, rest, ok1 := strings.Cut(f[5], ":")
		mnr, ino, ok2 := strings.Cut(rest, ":")
		var ok3, ok4, ok5 bool
		l.Major, ok3 = hextou64(maj)
		l.Minor, ok4 = hextou64(mnr)
		l.Inode, ok5 = atou64(ino)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			return nil, perr(file, line, "bad file %s in %s", quote(f[5]), quote(t))
		}
		out = append(out, l)
	}
	return out, nil
}
