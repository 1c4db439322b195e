package diagnose

import "github.com/memdoctor/memdoctor/internal/sample"

// Accounting says where the memory is. Used is (total − available) / total:
// "free" is not the number to watch, because Linux fills idle memory with
// page cache that it gives back on demand; MemAvailable (3.14+) estimates
// what can be had without swapping.
type Accounting struct {
	TotalBytes     int64      `json:"total_bytes"`
	AvailableBytes int64      `json:"available_bytes"`
	FreeBytes      int64      `json:"free_bytes"`
	UsedBytes      int64      `json:"used_bytes"`
	UsedPercent    float64    `json:"used_percent"`
	SwapTotalBytes int64      `json:"swap_total_bytes"`
	SwapFreeBytes  int64      `json:"swap_free_bytes"`
	Categories     []Category `json:"categories"`
	// Explain says in one sentence why free is not the number to watch.
	Explain string `json:"explain"`
}

// Category is one place memory is.
type Category struct {
	Name    string  `json:"name"`
	Bytes   int64   `json:"bytes"`
	Percent float64 `json:"percent"`
	// Reclaimable says whether the kernel counts it (at least in part) as
	// available.
	Reclaimable bool   `json:"reclaimable"`
	Source      string `json:"source"`
}

func mi(s *sample.Scrape, key string) int64 { return int64(s.Value("node_memory_" + key + "_bytes")) }

func accounting(s *sample.Scrape) Accounting {
	a := Accounting{
		TotalBytes:     mi(s, "MemTotal"),
		AvailableBytes: mi(s, "MemAvailable"),
		FreeBytes:      mi(s, "MemFree"),
		SwapTotalBytes: mi(s, "SwapTotal"),
		SwapFreeBytes:  mi(s, "SwapFree"),
	}
	if !s.Has("node_memory_MemAvailable_bytes") {
		// Before 3.14: approximate the kernel's later formula.
		a.AvailableBytes = a.FreeBytes + mi(s, "Active_file") + mi(s, "Inactive_file") + mi(s, "SReclaimable")
	}
	a.UsedBytes = a.TotalBytes - a.AvailableBytes
	if a.TotalBytes > 0 {
		a.UsedPercent = 100 * float64(a.UsedBytes) / float64(a.TotalBytes)
	}
	hugetlb := mi(s, "Hugetlb")
	if !s.Has("node_memory_Hugetlb_bytes") {
		hugetlb = int64(s.Value("node_memory_HugePages_Total") * s.Value("node_memory_Hugepagesize_bytes"))
	}
	cats := []Category{
		{Name: "free", Bytes: a.FreeBytes, Reclaimable: true, Source: "MemFree"},
		{Name: "anon", Bytes: mi(s, "AnonPages"), Source: "AnonPages"},
		{Name: "page_cache_active", Bytes: mi(s, "Active_file"), Reclaimable: true, Source: "Active(file)"},
		{Name: "page_cache_inactive", Bytes: mi(s, "Inactive_file"), Reclaimable: true, Source: "Inactive(file)"},
		{Name: "shmem", Bytes: mi(s, "Shmem"), Source: "Shmem (tmpfs, shared anonymous; needs swap to free)"},
		{Name: "slab_reclaimable", Bytes: mi(s, "SReclaimable"), Reclaimable: true, Source: "SReclaimable"},
		{Name: "slab_unreclaimable", Bytes: mi(s, "SUnreclaim"), Source: "SUnreclaim"},
		{Name: "kernel_stack", Bytes: mi(s, "KernelStack"), Source: "KernelStack"},
		{Name: "page_tables", Bytes: mi(s, "PageTables") + mi(s, "SecPageTables"), Source: "PageTables + SecPageTables"},
		{Name: "percpu", Bytes: mi(s, "Percpu"), Source: "Percpu"},
		{Name: "hugepages", Bytes: hugetlb, Source: "Hugetlb (HugePages_Total × Hugepagesize)"},
		{Name: "swap_cache", Bytes: mi(s, "SwapCached"), Reclaimable: true, Source: "SwapCached"},
	}
	var known int64
	for _, c := range cats {
		known += c.Bytes
	}
	other := a.TotalBytes - known
	if other < 0 {
		other = 0
	}
	cats = append(cats, Category{Name: "unexplained", Bytes: other,
		Source: "MemTotal minus the rest: drivers, vmalloc, network buffers, unaccounted kernel memory"})
	for i := range cats {
		if a.TotalBytes > 0 {
			cats[i].Percent = 100 * float64(cats[i].Bytes) / float64(a.TotalBytes)
		}
	}
	a.Categories = cats
	a.Explain = "Used = (MemTotal − MemAvailable) / MemTotal. MemFree is not the number to watch: " +
		"idle memory is lent to the page cache and given back on demand, which MemAvailable counts " +
		"(free above the reserves, about half of the file cache and of reclaimable slab)."
	return a
}

// Category returns the named category's bytes.
func (a Accounting) Category(name string) int64 {
	for _, c := range a.Categories {
		if c.Name == name {
			return c.Bytes
		}
	}
	return 0
}
