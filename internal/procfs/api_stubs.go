package procfs

// TEMPORARY: signatures to implement, one file per source. Delete this file
// once every function lives in its own file.

import "errors"

var errTODO = errors.New("not implemented")

// Meminfo reads proc/meminfo. kB values are bytes; HugePages_* are counts.
func (f FS) Meminfo() (KV, error) { return KV{}, errTODO }

// Vmstat reads proc/vmstat.
func (f FS) Vmstat() (KV, error) { return KV{}, errTODO }

// Zoneinfo reads proc/zoneinfo.
func (f FS) Zoneinfo() ([]Zone, error) { return nil, errTODO }

// ParseZoneinfo parses proc/zoneinfo.
func ParseZoneinfo(data []byte) ([]Zone, error) { return nil, errTODO }

// Slabinfo reads proc/slabinfo (root only on most hosts).
func (f FS) Slabinfo() ([]Slab, error) { return nil, errTODO }

// ParseSlabinfo parses proc/slabinfo version 2.x.
func ParseSlabinfo(data []byte) ([]Slab, error) { return nil, errTODO }

// Cgroups reads proc/cgroups.
func (f FS) Cgroups() ([]CgroupSubsys, error) { return nil, errTODO }

// ParseCgroups parses proc/cgroups.
func ParseCgroups(data []byte) ([]CgroupSubsys, error) { return nil, errTODO }

// PressureMemory reads proc/pressure/memory.
func (f FS) PressureMemory() (PSI, error) { return PSI{}, errTODO }

// ParsePSI parses a pressure file; file names it in errors.
func ParsePSI(data []byte, file string) (PSI, error) { return PSI{}, errTODO }

// Stat reads proc/stat.
func (f FS) Stat() (Stat, error) { return Stat{}, errTODO }

// ParseStat parses proc/stat.
func ParseStat(data []byte) (Stat, error) { return Stat{}, errTODO }

// SysctlVM reads every readable file of proc/sys/vm, trimmed; unreadable
// ones (write-only, permission) are skipped and named in the second result.
func (f FS) SysctlVM() (map[string]string, []string, error) { return nil, nil, errTODO }

// ParseInts parses a blank-separated list of integers ("256 256 32 0 0").
func ParseInts(s string) ([]int64, error) { return nil, errTODO }

// KernelRelease reads proc/sys/kernel/osrelease.
func (f FS) KernelRelease() (string, error) { return "", errTODO }

// PIDs lists the numeric entries of proc, ascending.
func (f FS) PIDs() ([]int, error) { return nil, errTODO }

// ProcStatus reads proc/PID/status.
func (f FS) ProcStatus(pid int) (KV, error) { return KV{}, errTODO }

// ProcStatm reads proc/PID/statm.
func (f FS) ProcStatm(pid int) (Statm, error) { return Statm{}, errTODO }

// ParseStatm parses proc/PID/statm.
func ParseStatm(data []byte, file string) (Statm, error) { return Statm{}, errTODO }

// ProcSmapsRollup reads proc/PID/smaps_rollup (4.14+), without its header line.
func (f FS) ProcSmapsRollup(pid int) (KV, error) { return KV{}, errTODO }

// ProcMaps reads proc/PID/maps.
func (f FS) ProcMaps(pid int) ([]Mapping, error) { return nil, errTODO }

// ParseMaps parses proc/PID/maps.
func ParseMaps(data []byte, file string) ([]Mapping, error) { return nil, errTODO }

// ProcComm reads proc/PID/comm, trimmed.
func (f FS) ProcComm(pid int) (string, error) { return "", errTODO }

// ProcCmdline reads proc/PID/cmdline split at NUL bytes.
func (f FS) ProcCmdline(pid int) ([]string, error) { return nil, errTODO }

// Mountinfo reads proc/self/mountinfo.
func (f FS) Mountinfo() ([]Mount, error) { return nil, errTODO }

// ParseMountinfo parses a mountinfo file.
func ParseMountinfo(data []byte) ([]Mount, error) { return nil, errTODO }

// Buddyinfo reads proc/buddyinfo: free blocks per order, per node and zone.
func (f FS) Buddyinfo() ([]Buddy, error) { return nil, errTODO }

// Buddy is one line of proc/buddyinfo.
type Buddy struct {
	Node   int
	Zone   string
	Blocks []int64 // index = order
}

// GlibcVersion returns the host's glibc version ("2.36") and the release
// string it came from, by scanning libc.so.6 for the "GNU C Library" banner.
// A capture carries it as the text file "memdoctor/glibc-version".
func (f FS) GlibcVersion() (version, banner string, err error) { return "", "", errTODO }

// ParseGlibcBanner finds the glibc release banner in a libc binary.
func ParseGlibcBanner(data []byte) (version, banner string, ok bool) { return "", "", false }

// CgroupInt reads a one-number cgroup file (memory.current,
// memory.usage_in_bytes, ...). "max" reads as -1.
func (f FS) CgroupInt(name string) (int64, error) { return 0, errTODO }

// ParseCgroupInt parses a one-number cgroup file; "max" is -1.
func ParseCgroupInt(data []byte, file string) (int64, error) { return 0, errTODO }

// CgroupKV reads a key-value cgroup file (memory.stat, cgroup.stat, memory.events).
func (f FS) CgroupKV(name string) (KV, error) { return KV{}, errTODO }
