package runtimes

import (
	"io/fs"
	"syscall"
)

// exeID tells an executable's version apart: device, inode, size and the
// times of its last modification and change (nanoseconds). The change
// time cannot be set back, so a file rewritten in place whose
// modification time was restored is still told apart.
type exeID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func idOfFile(f fs.File) (exeID, bool) {
	fi, err := f.Stat()
	if err != nil {
		return exeID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return exeID{}, false
	}
	return exeID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, //nolint:unconvert // Dev is uint32 on some architectures
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}
