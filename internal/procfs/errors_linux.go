package procfs

import "syscall"

var errESRCH error = syscall.ESRCH

// fileID is the device and inode of a file on disk; ok is false for files
// that are not (a capture held in memory).
func fileID(fi interface{ Sys() any }) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Dev, st.Ino, true
}
