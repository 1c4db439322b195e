package procfs

// cgroup filesystem files (mm/memcontrol.c, mm/memcontrol-v1.c,
// kernel/cgroup/cgroup.c), read by path below the FS root:
//
// One number (v1 memory.usage_in_bytes, memory.limit_in_bytes; v2
// memory.current, memory.max, memory.high, memory.swap.max; "max" means no
// limit; an unlimited v1 limit reads as PAGE_COUNTER_MAX × page size,
// 9223372036854771712 with 4 KiB pages):
//
//	153784320
//	max
//
// Key-value (v1 and v2 memory.stat in bytes and counts, v2 cgroup.stat,
// memory.events, memory.events.local, memory.swap.events):
//
//	anon 10485760
//	file 52428800
//	nr_dying_descendants 49
//
// These are parsed with the generic key-value parser (see kv.go) and keep
// every key.
//
// A list of processes (cgroup.procs: the thread group ids of the
// processes in the cgroup itself, one a line, in no order; empty when it
// has none):
//
//	1234
//	1240

import "strings"

// CgroupInt reads a one-number cgroup file (memory.current,
// memory.usage_in_bytes, ...). "max" reads as -1.
func (f FS) CgroupInt(name string) (int64, error) {
	data, err := f.ReadSmall(name)
	if err != nil {
		return 0, err
	}
	return ParseCgroupInt(data, name)
}

// ParseCgroupInt parses a one-number cgroup file; "max" is -1.
func ParseCgroupInt(data []byte, file string) (int64, error) {
	s := trimSpace(string(data))
	if s == "max" {
		return -1, nil
	}
	v, ok := atoi(s)
	if !ok {
		return 0, perr(file, 1, "%s is not a number or \"max\"", quote(s))
	}
	return v, nil
}

// CgroupKV reads a key-value cgroup file (memory.stat, cgroup.stat, memory.events).
func (f FS) CgroupKV(name string) (KV, error) {
	data, err := f.ReadSmall(name)
	if err != nil {
		return KV{}, err
	}
	return ParseKV(data, name)
}

// ParseCgroupProcs parses cgroup.procs: one process id a line, up to limit
// of them (0: no bound); more says the list went on past limit.
func ParseCgroupProcs(data []byte, file string, limit int) (pids []int, more bool, err error) {
	line := 0
	for rest := string(data); rest != ""; {
		var l string
		l, rest, _ = strings.Cut(rest, "\n")
		line++
		l = trimSpace(l)
		if l == "" {
			continue
		}
		v, ok := atou(l)
		if !ok || v == 0 || v > 1<<31 {
			return pids, false, perr(file, line, "%s is not a process id", quote(l))
		}
		if limit > 0 && len(pids) >= limit {
			return pids, true, nil
		}
		pids = append(pids, int(v))
	}
	return pids, false, nil
}
