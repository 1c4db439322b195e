package procfs

// /proc/sys/vm/* (kernel/sysctl.c, mm/*.c; one file per vm.* sysctl):
//
//	min_free_kbytes           67584
//	watermark_scale_factor    10
//	lowmem_reserve_ratio      256	256	32	0	0      (tab-separated, one per zone)
//	numa_zonelist_order       Node                        (text)
//	compact_memory            write-only (mode 0200): reading fails with EACCES, even for root
//	drop_caches               write-only (mode 0200)
//
// The set of files depends on kernel version and config, so the directory
// is walked rather than a list of names read.

import (
	"fmt"
	"io/fs"
)

// SysctlVM reads every readable file of proc/sys/vm, trimmed; unreadable
// ones (write-only, permission) are skipped and named in the second result.
// Only a failure to list the directory is an error.
func (f FS) SysctlVM() (map[string]string, []string, error) {
	const dir = "proc/sys/vm"
	entries, err := f.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	vals := make(map[string]string, len(entries))
	var unreadable []string
	for _, e := range entries {
		if e.IsDir() || e.Type()&fs.ModeType&^fs.ModeSymlink != 0 {
			continue
		}
		v, err := f.ReadTrimmed(dir + "/" + e.Name())
		if err != nil {
			unreadable = append(unreadable, e.Name())
			continue
		}
		vals[e.Name()] = v
	}
	return vals, unreadable, nil
}

// SysctlVMNamed reads the named files of proc/sys/vm, trimmed, as
// SysctlVM reads every one: one the kernel does not have is left out, one
// it refuses is named in the second result. No directory is listed.
func (f FS) SysctlVMNamed(names []string) (map[string]string, []string) {
	vals := make(map[string]string, len(names))
	var unreadable []string
	for _, n := range names {
		v, err := f.ReadTrimmed("proc/sys/vm/" + n)
		switch {
		case err == nil:
			vals[n] = v
		case IsNotExist(err):
		default:
			unreadable = append(unreadable, n)
		}
	}
	return vals, unreadable
}

// Sysctl reads one sysctl, proc/sys/NAME ("kernel/yama/ptrace_scope"),
// trimmed.
func (f FS) Sysctl(name string) (string, error) {
	return f.ReadTrimmed("proc/sys/" + name)
}

// ParseInts parses a blank-separated list of integers ("256 256 32 0 0").
// An empty or blank string gives an empty list.
func ParseInts(s string) ([]int64, error) {
	out := make([]int64, 0, countFields(s))
	for {
		var f string
		f, s = nextField(s)
		if f == "" {
			return out, nil
		}
		v, ok := atoi(f)
		if !ok {
			return nil, fmt.Errorf("%w: %s is not an integer", ErrMalformed, quote(f))
		}
		out = append(out, v)
	}
}
