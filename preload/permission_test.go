package preload

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzACL: any bytes as an access ACL decode or are refused without a
// panic, and a list of just the owner, group and other entries grants what
// the same mode bits grant.
func FuzzACL(f *testing.F) {
	entry := func(b []byte, tag, perm uint16, id uint32) []byte {
		b = binary.LittleEndian.AppendUint16(b, tag)
		b = binary.LittleEndian.AppendUint16(b, perm)
		return binary.LittleEndian.AppendUint32(b, id)
	}
	v2 := binary.LittleEndian.AppendUint32(nil, 2)
	minimal := entry(entry(entry(v2, aclUserObj, 6, ^uint32(0)), aclGroupObj, 4, ^uint32(0)), aclOther, 0, ^uint32(0))
	f.Add(minimal, uint32(65534), uint32(65534), uint16(0o640), uint32(0), uint32(65534))
	named := entry(entry(entry(entry(entry(v2, aclUserObj, 6, ^uint32(0)), aclUser, 4, 65534), aclGroupObj, 0, ^uint32(0)), aclMask, 4, ^uint32(0)), aclOther, 0, ^uint32(0))
	f.Add(named, uint32(65534), uint32(100), uint16(0o640), uint32(0), uint32(0))
	f.Add([]byte{2, 0, 0, 0, 1}, uint32(0), uint32(0), uint16(0), uint32(0), uint32(0))
	f.Add([]byte{}, uint32(1), uint32(1), uint16(0o777), uint32(1), uint32(1))
	f.Fuzz(func(t *testing.T, b []byte, uid, gid uint32, mode uint16, owner, group uint32) {
		l, err := parseACL(b)
		if err != nil {
			return
		}
		st := &unix.Stat_t{Uid: owner, Gid: group, Mode: uint32(mode & 0o777)}
		inGroup := func(g uint32) bool { return g == gid }
		for _, want := range []uint16{mayRead, mayExec} {
			_ = l.allows(st, uid, inGroup, want)
		}
		// The ACL a file without one has: its mode.
		m := entry(entry(entry(v2, aclUserObj, mode>>6&7, ^uint32(0)), aclGroupObj, mode>>3&7, ^uint32(0)), aclOther, mode&7, ^uint32(0))
		ml, err := parseACL(m)
		if err != nil {
			t.Fatal(err)
		}
		c := &Cred{UID: uid, GID: gid}
		for _, want := range []uint16{mayRead, mayExec} {
			var bits uint32
			switch {
			case c.UID == st.Uid:
				bits = st.Mode >> 6
			case gid == st.Gid:
				bits = st.Mode >> 3
			default:
				bits = st.Mode
			}
			if got, byMode := ml.allows(st, uid, inGroup, want), uint16(bits)&want == want; got != byMode {
				t.Errorf("mode %04o, uid %d gid %d asking %d of owner %d group %d: the ACL says %v, the mode %v", mode, uid, gid, want, owner, group, got, byMode)
			}
		}
	})
}
