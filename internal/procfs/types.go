package procfs

// Zone is one "Node N, zone NAME" section of /proc/zoneinfo (every zone,
// populated or not). Page counts are in pages of FS.PageSize. Free, Min,
// Low, High, Spanned, Present, Managed and Protection are present in every
// zone ParseZoneinfo accepts (kernel 3.8+); an unpopulated zone has no Stats
// and no PageSets.
type Zone struct {
	Node int
	Name string // DMA, DMA32, Normal, HighMem, Movable, Device
	// Free is "pages free" (NR_FREE_PAGES of the zone).
	Free int64
	// Boost is "boost" (watermark_boost, 5.0+); -1 when the kernel does not print it.
	Boost int64
	// Min, Low, High are the displayed watermarks (stored value + boost).
	Min, Low, High int64
	// Promo is the promo watermark (≈6.0+); -1 when absent.
	Promo                     int64
	Spanned, Present, Managed int64
	// CMA is "cma"; -1 when absent.
	CMA int64
	// Protection is lowmem_reserve[] for every zone index.
	Protection []int64
	// Stats holds every other "key value" line of the zone (nr_*, numa_*,
	// node_unreclaimable, start_pfn, ...), in the order first seen.
	Stats KV
	// NodeStats holds the "per-node stats" block; only the first populated
	// zone of a node carries it (4.8+), otherwise it is empty.
	NodeStats KV
	// PageSets are the per-CPU page lists ("cpu: N" blocks).
	PageSets []PageSet
}

// PageSet is one "cpu: N" block of a zone's pagesets.
type PageSet struct {
	CPU                int
	Count, High, Batch int64
	HighMin, HighMax   int64 // ≈6.7+; -1 when absent
	VMStatsThreshold   int64 // -1 when absent
	Extra              KV    // any other key inside the block
}

// Slab is one cache line of /proc/slabinfo (format version 2.1).
type Slab struct {
	Name                                     string
	ActiveObjs, NumObjs, ObjSize, ObjPerSlab int64
	PagesPerSlab                             int64
	Limit, BatchCount, SharedFactor          int64
	ActiveSlabs, NumSlabs, SharedAvail       int64
	// Extra holds columns this package does not name (for example the
	// "globalstat" and "cpustat" columns of a CONFIG_DEBUG_SLAB kernel),
	// keyed by their header name without brackets; nil when there are none.
	Extra map[string]int64
}

// Bytes is the memory held by the cache's slabs.
func (s Slab) Bytes(pageSize int) int64 { return s.NumSlabs * s.PagesPerSlab * int64(pageSize) }

// CgroupSubsys is one line of /proc/cgroups.
type CgroupSubsys struct {
	Name       string
	Hierarchy  int
	NumCgroups int64
	Enabled    bool
	// Extra holds columns beyond the four above, keyed by header name; nil
	// when there are none.
	Extra map[string]int64
}

// PSILine is one "some" or "full" line of a pressure file.
type PSILine struct {
	Avg10, Avg60, Avg300 float64 // percent
	TotalMicros          int64   // cumulative stall time, µs
}

// PSI is a parsed /proc/pressure/* or cgroup v2 *.pressure file.
type PSI struct {
	Some    PSILine
	Full    PSILine
	HasFull bool // "full" is absent for cpu on older kernels
}

// CPUTimes are the tick counters of one "cpu" line of /proc/stat (USER_HZ).
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal, Guest, GuestNice int64
}

// Stat is /proc/stat.
type Stat struct {
	Total CPUTimes   // the aggregate "cpu" line
	CPUs  []CPUTimes // "cpuN" lines in order
	// CPUIDs holds N of each "cpuN" line (CPUs may be sparse).
	CPUIDs       []int
	Ctxt         int64
	BootTime     int64 // btime, seconds since the epoch
	Processes    int64 // forks since boot
	ProcsRunning int64
	ProcsBlocked int64
	IntrTotal    int64 // first number of "intr"
	SoftIRQTotal int64 // first number of "softirq"
	// Other holds any other single-number line.
	Other map[string]int64
	// OtherLists holds any other line of several numbers; nil when none.
	OtherLists map[string][]int64
}

// Statm is /proc/PID/statm, in pages.
type Statm struct {
	Size, Resident, Shared, Text, Lib, Data, Dirty int64
}

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64
	Perms      string // "rw-p"
	Offset     uint64
	Dev        string // "fd:01"
	Inode      uint64
	Path       string // "" for anonymous; "[heap]", "[stack]", a file, ...
}

// Mount is one line of /proc/self/mountinfo. Octal escapes (\040 for a
// blank) are decoded in MountPoint, Root and Source.
type Mount struct {
	MountPoint   string
	Root         string
	FSType       string
	Source       string
	SuperOptions []string

	// MountID and ParentID are the first two fields.
	MountID, ParentID int
	// Dev is "major:minor" of the filesystem ("0:21").
	Dev string
	// Options are the per-mount options ("rw", "relatime").
	Options []string
	// Optional are the optional fields before " - " ("shared:1",
	// "master:2"); nil when there are none.
	Optional []string
}

// Buddy is one line of proc/buddyinfo.
type Buddy struct {
	Node   int
	Zone   string
	Blocks []int64 // index = order
}
