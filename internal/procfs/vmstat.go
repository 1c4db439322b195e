package procfs

// /proc/vmstat (mm/vmstat.c, vmstat_show), 2.6+:
//
//	nr_free_pages 797350
//	nr_zone_inactive_anon 1842
//	...
//	pgscan_kswapd 0
//	kswapd_low_wmark_hit_quickly 0
//
// One "name value" per line, every value a number: page counts (nr_*) in
// pages of FS.PageSize, events (pg*, compact_*, ...) as counts. Counters
// printed with %lu that are transiently negative read back negative. Names
// change between versions (pgsteal_<zone> split by actor in 3.4, zone
// suffixes dropped in 4.8, workingset_* split into _anon/_file in 5.9), so
// all are kept.

// Vmstat reads proc/vmstat.
func (f FS) Vmstat() (KV, error) {
	return parseFile(f, "proc/vmstat", func(data []byte) (KV, error) {
		return ParseVmstat(data)
	})
}

// ParseVmstat parses proc/vmstat. A value that is not a number is an error.
func ParseVmstat(data []byte) (KV, error) {
	return parseKV(string(data), "proc/vmstat", kvOptions{numeric: true})
}
