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
