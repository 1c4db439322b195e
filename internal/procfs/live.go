package procfs

// The live host's /proc, for what is not a text file to parse but a
// protocol (/proc/PID/mem, pagemap, an executable to open, a descriptor's
// path to hand to another API) and for the packages that take the proc
// mount as an option. Everything that names a /proc path does it here.

import (
	"os"
	"strconv"
	"syscall"
)

// ProcMount is the live host's proc mount.
const ProcMount = "/proc"

// Live returns an FS over the live host's root.
func Live() FS { return NewFS("/") }

// PIDPath is /proc/PID/name on the live host.
func PIDPath(pid int, name string) string {
	return ProcMount + "/" + strconv.Itoa(pid) + "/" + name
}

// TaskPath is /proc/PID/task/TID/name on the live host.
func TaskPath(pid, tid int, name string) string {
	return ProcMount + "/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/" + name
}

// SelfPath is /proc/self/name: the calling process' own file.
func SelfPath(name string) string { return ProcMount + "/self/" + name }

// SelfTaskPath is /proc/self/task/TID: one of the calling process' threads.
func SelfTaskPath(tid int) string { return ProcMount + "/self/task/" + strconv.Itoa(tid) }

// SelfFDPath is /proc/self/fd/FD: the file the calling process holds open
// as fd, for an API that takes a path.
func SelfFDPath(fd int) string { return ProcMount + "/self/fd/" + strconv.Itoa(fd) }

// SelfExe is the calling process' own executable.
const SelfExe = ProcMount + "/self/exe"

// OpenMem opens /proc/PID/mem with flag (os.O_RDONLY, or os.O_RDWR for a
// tracer writing a stopped thread's memory), close-on-exec.
func OpenMem(pid, flag int) (*os.File, error) {
	return os.OpenFile(PIDPath(pid, "mem"), flag|syscall.O_CLOEXEC, 0)
}

// OpenPagemap opens /proc/PID/pagemap for reading (one 8-byte entry a
// virtual page: present, swapped, frame).
func OpenPagemap(pid int) (*os.File, error) {
	return os.Open(PIDPath(pid, "pagemap"))
}
