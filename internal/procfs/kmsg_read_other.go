//go:build !linux

package procfs

import "errors"

// Bounds of one read of the kernel log (see the Linux version).
const (
	MaxKmsgRecords = 1 << 16
	MaxKmsgBytes   = 4 << 20
)

// ReadKmsg reads /dev/kmsg, which only Linux has.
func ReadKmsg(path string, maxRecords, maxBytes int, keep func(record []byte) bool) ([]byte, error) {
	return nil, errors.New("the kernel log (/dev/kmsg) is Linux's")
}
