package model

import "encoding/json"

// Accounting says where the memory is. Used is (total − available) / total:
// "free" is not the number to watch, because Linux fills idle memory with
// page cache that it gives back on demand; MemAvailable (3.14+) estimates
// what can be had without swapping.
type Accounting struct {
	TotalBytes     int64 `json:"total_bytes"`
	AvailableBytes int64 `json:"available_bytes"`
	FreeBytes      int64 `json:"free_bytes"`
	// UsedBytes and UsedPercent are absent (0) when they cannot be known
	// or would be impossible (MemTotal missing, a value below zero or
	// above the total); UsedMissing then says why.
	UsedBytes      int64      `json:"used_bytes,omitempty"`
	UsedPercent    float64    `json:"used_percent,omitempty"`
	UsedMissing    string     `json:"used_missing,omitempty"`
	SwapTotalBytes int64      `json:"swap_total_bytes"`
	SwapFreeBytes  int64      `json:"swap_free_bytes"`
	Categories     []Category `json:"categories"`
	// Explain says in one sentence why free is not the number to watch.
	Explain string `json:"explain"`
	// Invalid names an impossible value among the meminfo series (a
	// negative or wrapped size, MemTotal 0, MemAvailable above MemTotal,
	// NaN); the numbers above are then not to be trusted, and the rules
	// that read them are not evaluated.
	Invalid string `json:"invalid,omitempty"`
	// AvailableMissing names what is missing to know MemAvailable ("" when
	// it is known or estimated); AvailableBytes is then 0 and means nothing.
	AvailableMissing string `json:"available_missing,omitempty"`
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
	// Parts are what meminfo attributes within the unexplained row (each a
	// bound: see UnexplainedSource); the rest of it no field counts.
	Parts []Category `json:"parts,omitempty"`
}

// UnexplainedSource says what the unexplained row holds: the memory in
// MemTotal that no meminfo field of the other rows counts.
const UnexplainedSource = "MemTotal minus every other row: kernel memory that no meminfo category counts. " +
	"In part attributed by meminfo: vmalloc (VmallocUsed, 5.3+; it includes vmapped kernel stacks, already in kernel_stack, so it is an upper bound), " +
	"other reclaimable kernel memory (KReclaimable - SReclaimable, 4.20+), the zswap pool (Zswap), " +
	"and in /proc/vmstat struct pages allocated after boot (nr_memmap_pages) and IOMMU page tables (nr_iommu_pages). " +
	"The rest no field counts: pages drivers take with alloc_pages (GPU and DMA buffers, network page pools and socket data), " +
	"pages a balloon driver took without lowering MemTotal, the per-CPU lists of free pages, page cache that is mlocked or on ramfs (Unevictable, not in the file LRU), " +
	"and pages in transit (isolated for migration or compaction)."

// Category returns the named category's bytes.
func (a Accounting) Category(name string) int64 {
	for _, c := range a.Categories {
		if c.Name == name {
			return c.Bytes
		}
	}
	return 0
}

// MarshalJSON leaves out a total or an available figure that cannot be
// (MemTotal missing or 0; MemAvailable unknown, above MemTotal, or beside
// an impossible meminfo value, which Invalid names): the
// JSON carries no impossible number, and Invalid, AvailableMissing or
// UsedMissing say why. The fields keep their order.
func (a Accounting) MarshalJSON() ([]byte, error) { return json.Marshal(a.JSONView()) }

// JSONView is the value Accounting's JSON shows (jsonenc.Viewer).
func (a Accounting) JSONView() any {
	type plain Accounting
	out := struct {
		TotalBytes     *int64 `json:"total_bytes,omitempty"`
		AvailableBytes *int64 `json:"available_bytes,omitempty"`
		plain
	}{plain: plain(a)}
	if a.TotalBytes > 0 {
		out.TotalBytes = &a.TotalBytes
		if a.AvailableMissing == "" && a.Invalid == "" && a.AvailableBytes <= a.TotalBytes {
			out.AvailableBytes = &a.AvailableBytes
		}
	}
	return out
}
