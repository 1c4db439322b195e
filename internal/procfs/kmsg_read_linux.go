package procfs

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// Bounds of one read of the kernel log: the records read and the bytes
// kept (the newest). A default ring is 128 KiB to a few MiB.
const (
	MaxKmsgRecords = 1 << 16
	MaxKmsgBytes   = 4 << 20
	kmsgRecordBuf  = 8192 // a record never exceeds this (printk's CONSOLE_EXT_LOG_MAX)
)

// ReadKmsg reads the kernel log from path (/dev/kmsg) without blocking,
// from the oldest record the ring still holds to the newest: it opens the
// device non-blocking, reads one record per read until the kernel says
// there is no more (EAGAIN) or maxRecords reads were done, and keeps the
// newest maxBytes (whole records). A record overwritten while reading
// (EPIPE) is skipped. A regular file (a saved log) is read to its end.
// Nothing is written to the log and the ring is not cleared. keep, when
// not nil, chooses the device's records worth keeping (OOMRecord: those
// an OOM report is read from), so that a log of thousands of records is
// not copied whole to find a few; a regular file is kept whole.
func ReadKmsg(path string, maxRecords, maxBytes int, keep func(record []byte) bool) ([]byte, error) {
	// Raw system calls: an os.File of a character device would wait in
	// the runtime's poller on EAGAIN instead of returning it.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer func() { _ = syscall.Close(fd) }()
	var st syscall.Stat_t
	device := syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFCHR
	var out []byte
	buf := make([]byte, kmsgRecordBuf)
	read := syscall.Read
	if device {
		read = readNonblocking
	}
	for range maxRecords {
		n, err := read(fd, buf)
		if n > 0 && (!device || keep == nil || keep(buf[:n])) {
			out = append(out, buf[:n]...)
			if device && buf[n-1] != '\n' {
				out = append(out, '\n')
			}
			if len(out) > 2*maxBytes {
				out = keepNewest(out, maxBytes)
			}
		}
		if err != nil {
			if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EINTR) {
				continue
			}
			if errors.Is(err, syscall.EAGAIN) {
				break
			}
			return keepNewest(out, maxBytes), &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
	}
	return keepNewest(out, maxBytes), nil
}

// keepNewest trims b to its last limit bytes, starting at a record's start.
func keepNewest(b []byte, limit int) []byte {
	if len(b) <= limit {
		return b
	}
	cut := b[len(b)-limit:]
	if i := bytes.IndexByte(cut, '\n'); i >= 0 {
		cut = cut[i+1:]
	} else {
		cut = nil
	}
	return append([]byte(nil), cut...)
}

// readNonblocking is read(2) of a descriptor that cannot block (the log
// device opened O_NONBLOCK answers at once, a record or EAGAIN) without
// telling the scheduler a system call has begun and ended: a log of
// thousands of records is thousands of reads, and that bookkeeping was
// some 7 % of their CPU, with a context switch for every other record
// (BenchmarkReadKmsg).
func readNonblocking(fd int, p []byte) (int, error) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if errno != 0 {
		return -1, errno
	}
	return int(n), nil
}
