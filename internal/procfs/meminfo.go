package procfs

// /proc/meminfo (fs/proc/meminfo.c, meminfo_proc_show), 2.6+:
//
//	MemTotal:       24684092 kB
//	MemFree:        21760416 kB
//	MemAvailable:   24123564 kB     (3.14+)
//	...
//	HugePages_Total:       0        (a count, no unit)
//	Hugepagesize:       2048 kB
//	DirectMap1G:     4194304 kB
//
// One "Key: value [kB]" per line; every value is a number. Keys come and go
// with kernel versions and config options, so all of them are kept.

// Meminfo reads proc/meminfo. kB values are bytes; HugePages_* are counts.
func (f FS) Meminfo() (KV, error) {
	data, err := f.ReadFile("proc/meminfo")
	if err != nil {
		return KV{}, err
	}
	return ParseMeminfo(data)
}

// ParseMeminfo parses proc/meminfo. A value that is not a number is an error.
func ParseMeminfo(data []byte) (KV, error) {
	return parseKV(string(data), "proc/meminfo", kvOptions{numeric: true})
}
