package model

import (
	"github.com/memdoctor/memdoctor/internal/sample"
)

// mi returns a meminfo size in bytes; one that cannot be (negative, NaN,
// beyond 8 EiB) is 0 here and named by meminfoInvalid.
func mi(s *sample.Snapshot, key string) int64 {
	v := s.Value("node_memory_" + key + "_bytes")
	if !(v >= 0 && v < MaxBytes) {
		return 0
	}
	return int64(v)
}

func accounting(s *sample.Snapshot) Accounting {
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
	a.Invalid = meminfoInvalid(s)
	a.AvailableMissing = availableMissing(s)
	a.UsedMissing = usedMissing(s, a)
	if a.UsedMissing == "" {
		a.UsedBytes = a.TotalBytes - a.AvailableBytes
		a.UsedPercent = 100 * float64(a.UsedBytes) / float64(a.TotalBytes)
	}
	hugetlb := mi(s, "Hugetlb")
	if !s.Has("node_memory_Hugetlb_bytes") {
		hugetlb = int64(s.Value("node_memory_HugePages_Total") * s.Value("node_memory_Hugepagesize_bytes"))
	}
	// Room for the unexplained category appended below.
	cats := append(make([]Category, 0, 13), []Category{
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
	}...)
	var known int64
	for _, c := range cats {
		known += c.Bytes
	}
	other := a.TotalBytes - known
	if other < 0 {
		other = 0
	}
	cats = append(cats, Category{Name: "unexplained", Bytes: other, Source: UnexplainedSource, Parts: unexplainedParts(s, other)})
	for i := range cats {
		if a.TotalBytes > 0 {
			cats[i].Percent = 100 * float64(cats[i].Bytes) / float64(a.TotalBytes)
			for j := range cats[i].Parts {
				cats[i].Parts[j].Percent = 100 * float64(cats[i].Parts[j].Bytes) / float64(a.TotalBytes)
			}
		}
	}
	a.Categories = cats
	a.Explain = "Used = (MemTotal − MemAvailable) / MemTotal. MemFree is not the number to watch: " +
		"idle memory is lent to the page cache and given back on demand, which MemAvailable counts " +
		"(free above the reserves, about half of the file cache and of reclaimable slab)."
	return a
}

// unexplainedParts attributes what meminfo can within the unexplained
// bytes, each part at most what is left.
func unexplainedParts(s *sample.Snapshot, other int64) []Category {
	var parts []Category
	left := other
	add := func(name string, b int64, src string) {
		b = min(b, left)
		if b <= 0 {
			return
		}
		left -= b
		parts = append(parts, Category{Name: name, Bytes: b, Source: src})
	}
	add("vmalloc", mi(s, "VmallocUsed"), "VmallocUsed (an upper bound: it includes vmapped kernel stacks)")
	if s.Has("node_memory_KReclaimable_bytes") {
		add("kernel_reclaimable_other", mi(s, "KReclaimable")-mi(s, "SReclaimable"), "KReclaimable - SReclaimable")
	}
	add("zswap_pool", mi(s, "Zswap"), "Zswap")
	ps := int64(s.Value("memdoctor_page_size_bytes"))
	if ps <= 0 {
		ps = 4096
	}
	add("memmap_runtime", int64(s.Value("node_vmstat_nr_memmap_pages"))*ps, "vmstat nr_memmap_pages: struct pages allocated after boot (memory hotplug), 6.7+")
	add("iommu_page_tables", int64(s.Value("node_vmstat_nr_iommu_pages"))*ps, "vmstat nr_iommu_pages: IOMMU page tables, 6.9+")
	if len(parts) > 0 {
		parts = append(parts, Category{Name: "not_in_meminfo", Bytes: left,
			Source: "driver pages (alloc_pages), balloon, per-CPU free lists, mlocked or ramfs page cache, pages in transit"})
	}
	return parts
}

// usedMissing says why used memory cannot be given as a number, or "" when
// it can: MemTotal missing or 0, MemAvailable unknown, or a meminfo value
// that cannot be (then used could come out below zero or above the total).
func usedMissing(s *sample.Snapshot, a Accounting) string {
	switch {
	case a.Invalid != "":
		return "not computed from impossible data (" + a.Invalid + ")"
	case !s.Has("node_memory_MemTotal_bytes"):
		return "node_memory_MemTotal_bytes is missing"
	case a.TotalBytes <= 0:
		return "node_memory_MemTotal_bytes is 0"
	case a.AvailableMissing != "":
		return "MemAvailable is unknown (" + a.AvailableMissing + ")"
	case a.AvailableBytes > a.TotalBytes:
		return "MemAvailable is above MemTotal"
	}
	return ""
}
