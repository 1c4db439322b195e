package procfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// RemoveMemlockForBPF lifts the locked-memory limit, which kernels before
// 5.11 charge BPF maps and programs to; later ones charge the memory cgroup
// and ignore the limit, so failing to raise it there is no error. The
// tracers call it before loading their programs. (The BPF library's own
// helper package probes the kernel when it is initialised, creating a BPF
// map in every memdoctor command that links it, so memdoctor does this
// itself.)
func RemoveMemlockForBPF() error {
	err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
	if err == nil {
		return nil
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		var major, minor int
		if _, serr := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); serr == nil && (major > 5 || major == 5 && minor >= 11) {
			return nil
		}
	}
	return fmt.Errorf("raising RLIMIT_MEMLOCK for BPF (kernel before 5.11): %w", err)
}
