package record

import "syscall"

// madviseDontNeed is madvise(addr, n, MADV_DONTNEED) on an address range
// (not a Go slice: the range is the executable's own mapping).
func madviseDontNeed(addr, n uintptr) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, n, syscall.MADV_DONTNEED); e != 0 {
		return e
	}
	return nil
}
