package preload

// Reading as the process could, without becoming its user.
//
// The recorder's unit forbids setgroups and setresuid (systemd's
// @privileged system calls) and keeps only CAP_SYS_PTRACE and
// CAP_DAC_READ_SEARCH, so ReadStats cannot take the process' user the way
// Ask does. It reads with memdoctor's own credentials and first checks
// what the kernel would have checked for the process' fs uid, fs gid and
// groups:
//
//   - every directory from the stats directory up to the process' root (or
//     working directory, for a relative path) must be searchable by that
//     user. The walk goes up through "..", from the directory handle
//     already open, so it checks the directories that lead to it now, on
//     the same mounts: a directory reached through a symlink is checked
//     where it is, which is a path the process could take itself;
//   - the file itself must be readable by that user, on the open file.
//
// Permissions are the mode bits or, where a file has one, its POSIX access
// ACL (system.posix_acl_access), evaluated as the kernel does. An LSM's
// policy for the process (AppArmor, SELinux) is not known here: a file its
// user may read, the process may still be denied, and memdoctor reads it.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

const (
	mayExec = 1
	mayRead = 4
)

// maxWalk bounds the directories walked up (a path of PATH_MAX has at most
// half as many components).
const maxWalk = 4096

// fileID tells directories apart: the mount as well as the inode, so that
// a bind mount of the root further down is not taken for the root.
type fileID struct{ mnt, dev, ino uint64 }

func idOf(fd int) (fileID, error) {
	var sx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_MNT_ID, &sx); err != nil {
		return fileID{}, err
	}
	id := fileID{dev: uint64(sx.Dev_major)<<32 | uint64(sx.Dev_minor), ino: sx.Ino}
	if sx.Mask&unix.STATX_MNT_ID != 0 {
		id.mnt = sx.Mnt_id
	}
	return id, nil
}

// searchable checks that c may search dfd and every directory above it up
// to anchor (which dfd is below). Nothing is checked for no user or root.
func searchable(anchor, dfd int, c *Cred) error {
	if c == nil || c.UID == 0 {
		return nil
	}
	top, err := idOf(anchor)
	if err != nil {
		return err
	}
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	fd, err := unix.Openat(dfd, ".", flags, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	for range maxWalk {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		ok, err := allowed(fd, &st, c, mayExec)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: the process' user (uid %d) may not search a directory on the way to its stats file (mode %04o, uid %d, gid %d): memdoctor reads only what the process could read itself",
				ErrUnsafe, c.UID, st.Mode&0o7777, st.Uid, st.Gid)
		}
		id, err := idOf(fd)
		if err != nil {
			return err
		}
		if id == top {
			return nil
		}
		parent, err := unix.Openat(fd, "..", flags, 0)
		if err != nil {
			return err
		}
		_ = unix.Close(fd)
		fd = parent
		pid, err := idOf(fd)
		if err != nil {
			return err
		}
		if pid == id { // a root that is not the process'
			return fmt.Errorf("%w: the stats directory is not below the process' root or working directory", ErrUnsafe)
		}
	}
	return fmt.Errorf("%w: the stats directory is more than %d directories deep", ErrUnsafe, maxWalk)
}

// mayReadFile checks that c may read the open file fd (st is its fstat).
func mayReadFile(fd int, st *unix.Stat_t, c *Cred) error {
	if c == nil || c.UID == 0 {
		return nil
	}
	ok, err := allowed(fd, st, c, mayRead)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the process' user (uid %d) may not read it (mode %04o, uid %d, gid %d): memdoctor reads only what the process could read itself",
			ErrUnsafe, c.UID, st.Mode&0o7777, st.Uid, st.Gid)
	}
	return nil
}

// allowed says whether c has the permission want (mayRead, mayExec) on the
// file fd, from its mode and access ACL.
func allowed(fd int, st *unix.Stat_t, c *Cred, want uint16) (bool, error) {
	acl, err := accessACL(fd)
	if err != nil {
		return false, err
	}
	inGroup := func(g uint32) bool { return g == c.GID || slices.Contains(c.Groups, g) }
	if acl == nil {
		var bits uint32
		switch {
		case c.UID == st.Uid:
			bits = st.Mode >> 6
		case inGroup(st.Gid):
			bits = st.Mode >> 3
		default:
			bits = st.Mode
		}
		return uint16(bits)&want == want, nil
	}
	return acl.allows(st, c.UID, inGroup, want), nil
}

// The tags of an ACL entry (linux/posix_acl.h).
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

type aclEntry struct {
	tag, perm uint16
	id        uint32
}

type accessList []aclEntry

// accessACL reads the access ACL of fd (an O_PATH descriptor too, through
// /proc/self/fd): nil when it has none beyond its mode.
func accessACL(fd int) (accessList, error) {
	buf := make([]byte, 4+8*32)
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	for {
		n, err := unix.Getxattr(p, "system.posix_acl_access", buf)
		switch {
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < 64<<10:
			buf = make([]byte, 2*len(buf))
			continue
		case err != nil:
			return nil, fmt.Errorf("reading an ACL: %w", err)
		}
		return parseACL(buf[:n])
	}
}

// parseACL decodes the xattr form: a version (2), then entries of tag,
// permissions and id, little-endian.
func parseACL(b []byte) (accessList, error) {
	if len(b) < 4 || (len(b)-4)%8 != 0 || binary.LittleEndian.Uint32(b) != 2 {
		return nil, fmt.Errorf("%w: an ACL of %d bytes that does not decode", ErrUnsafe, len(b))
	}
	var l accessList
	for b = b[4:]; len(b) > 0; b = b[8:] {
		l = append(l, aclEntry{tag: binary.LittleEndian.Uint16(b), perm: binary.LittleEndian.Uint16(b[2:]), id: binary.LittleEndian.Uint32(b[4:])})
	}
	return l, nil
}

// allows evaluates the list for uid and its groups: the owner's entry for
// the owner; a named user's entry, under the mask; else any matching group
// entry (the owning group's or a named one) that grants want, under the
// mask, and none when some group matched but none granted it; else other.
func (l accessList) allows(st *unix.Stat_t, uid uint32, inGroup func(uint32) bool, want uint16) bool {
	mask := uint16(7)
	var other uint16
	for _, e := range l {
		switch e.tag {
		case aclMask:
			mask = e.perm
		case aclOther:
			other = e.perm
		}
	}
	if uid == st.Uid {
		for _, e := range l {
			if e.tag == aclUserObj {
				return e.perm&want == want
			}
		}
		return false
	}
	for _, e := range l {
		if e.tag == aclUser && e.id == uid {
			return e.perm&mask&want == want
		}
	}
	matched := false
	for _, e := range l {
		if (e.tag == aclGroupObj && inGroup(st.Gid)) || (e.tag == aclGroup && inGroup(e.id)) {
			matched = true
			if e.perm&mask&want == want {
				return true
			}
		}
	}
	if matched {
		return false
	}
	return other&want == want
}
