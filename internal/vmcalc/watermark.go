// Package vmcalc reproduces the kernel's memory arithmetic from the numbers
// /proc exposes: per-zone watermarks (__setup_per_zone_wmarks, mm/page_alloc.c,
// 4.6+ with watermark_scale_factor), lowmem protection
// (setup_per_zone_lowmem_reserve), totalreserve_pages
// (calculate_totalreserve_pages) and MemAvailable (si_mem_available, 4.6+).
//
// All integer divisions truncate exactly as the kernel's u64 arithmetic does,
// so a recomputation can be compared with /proc/zoneinfo for equality; any
// mismatch is a finding, not noise.
package vmcalc

// Zone is what the arithmetic needs to know about one zone.
type Zone struct {
	Node    int
	Name    string // DMA, DMA32, Normal, HighMem, Movable, Device
	Managed int64  // pages
	Free    int64  // pages free
	Boost   int64  // watermark_boost in pages (0 when unknown)
}

// Marks are a zone's watermarks in pages, without boost (the stored
// _watermark[] values). The displayed /proc/zoneinfo values add Boost.
type Marks struct {
	Min, Low, High, Promo int64
}

// Gap is the distance between successive watermarks (low-min = high-low).
func (m Marks) Gap() int64 { return m.Low - m.Min }

// Params are the sysctls the arithmetic depends on.
type Params struct {
	MinFreeKbytes        int64
	WatermarkScaleFactor int64
	// LowmemReserveRatio is vm.lowmem_reserve_ratio, one value per zone index.
	LowmemReserveRatio []int64
	PageSize           int // bytes
	// MovableIsLowmem: the kernel treats ZONE_MOVABLE as a lowmem zone
	// (counted in lowmem_pages, min from min_free_kbytes), as 6.1 does
	// (seen in the kernel lab: an empty Movable zone has 0/0/0); newer
	// kernels cap it like HighMem (6.18: 32/32/32). See MovableIsLowmemOn.
	MovableIsLowmem bool
}

// IsLowmem reports whether the zone counts towards lowmem_pages on current
// kernels: every zone except HighMem and Movable (ZONE_DEVICE is included;
// it has 0 managed pages). Params.IsLowmem follows the kernel's version.
func IsLowmem(name string) bool { return name != "HighMem" && name != "Movable" }

// IsLowmem is IsLowmem for the kernel the parameters describe.
func (p Params) IsLowmem(name string) bool {
	if name == "Movable" && p.MovableIsLowmem {
		return true
	}
	return IsLowmem(name)
}

// MovableIsLowmemOn reports whether a kernel release (major, minor) treats
// ZONE_MOVABLE as lowmem in __setup_per_zone_wmarks. The kernel's change
// "mm/page_alloc: fix min_free_kbytes calculation regarding ZONE_MOVABLE"
// (mm tree, summer 2023) reached mainline in 6.6: from then on the Movable
// zone is left out of the lowmem total and its watermarks are capped like
// HighMem's. Seen: 6.1 (lowmem) and 6.18 (not); a kernel that disagrees
// shows as a watermark mismatch, which check reports.
func MovableIsLowmemOn(major, minor int) bool { return major < 6 || (major == 6 && minor < 6) }

func pageShiftMinus10(pageSize int) uint {
	s := uint(0)
	for p := pageSize; p > 1; p >>= 1 {
		s++
	}
	if s < 10 {
		return 0
	}
	return s - 10
}

// PagesMin is min_free_kbytes in pages.
func PagesMin(p Params) int64 {
	ps := p.PageSize
	if ps == 0 {
		ps = 4096
	}
	return p.MinFreeKbytes >> pageShiftMinus10(ps)
}

// LowmemPages sums managed pages over the lowmem zones of every node.
func LowmemPages(zones []Zone) int64 { return lowmemPages(zones, Params{}) }

func lowmemPages(zones []Zone, p Params) int64 {
	var n int64
	for _, z := range zones {
		if p.IsLowmem(z.Name) {
			n += z.Managed
		}
	}
	return n
}

// multFrac is the kernel's mult_frac(x, n, d): (x/d)*n + ((x%d)*n)/d.
func multFrac(x, n, d int64) int64 {
	if d == 0 {
		return 0
	}
	return (x/d)*n + ((x%d)*n)/d
}

func clamp(v, lo, hi int64) int64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// Watermarks computes every zone's static watermarks, in input order.
func Watermarks(zones []Zone, p Params) []Marks {
	pagesMin := PagesMin(p)
	lowmem := lowmemPages(zones, p)
	out := make([]Marks, len(zones))
	for i, z := range zones {
		var tmp int64
		if lowmem > 0 {
			// u64 in the kernel; pagesMin*managed fits int64 for any real host.
			tmp = pagesMin * z.Managed / lowmem
		}
		var m Marks
		if p.IsLowmem(z.Name) {
			m.Min = tmp
		} else {
			m.Min = clamp(z.Managed/1024, 32, 128) // SWAP_CLUSTER_MAX .. 128
		}
		gap := max(tmp>>2, multFrac(z.Managed, p.WatermarkScaleFactor, 10000))
		m.Low = m.Min + gap
		m.High = m.Low + gap
		m.Promo = m.High + gap
		out[i] = m
	}
	return out
}

// ScaleFactorThreshold is the watermark_scale_factor below which the setting
// has no effect, because every lowmem zone's gap is min/4 instead:
// wsf* = 2500 × pages_min / lowmem_pages. Per-zone rounding can move the
// switch-over by one; EffectiveFrom gives the exact integer.
func ScaleFactorThreshold(zones []Zone, p Params) float64 {
	lowmem := lowmemPages(zones, p)
	if lowmem == 0 {
		return 0
	}
	return 2500 * float64(PagesMin(p)) / float64(lowmem)
}

// EffectiveFrom returns the smallest integer watermark_scale_factor that
// widens the gap of at least one populated lowmem zone beyond min/4.
func EffectiveFrom(zones []Zone, p Params) int64 {
	pagesMin := PagesMin(p)
	lowmem := lowmemPages(zones, p)
	best := int64(-1)
	for _, z := range zones {
		if !p.IsLowmem(z.Name) || z.Managed == 0 || lowmem == 0 {
			continue
		}
		quarter := (pagesMin * z.Managed / lowmem) >> 2
		// smallest wsf with multFrac(managed, wsf, 10000) > quarter.
		lo, hi := int64(0), int64(1)<<20
		for lo < hi {
			mid := (lo + hi) / 2
			if multFrac(z.Managed, mid, 10000) > quarter {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if best < 0 || lo < best {
			best = lo
		}
	}
	return best
}

// Protection computes lowmem_reserve[] for every zone. Zones are grouped per
// node in input order; each zone's array has one entry per zone of its node.
func Protection(zones []Zone, ratios []int64) [][]int64 {
	out := make([][]int64, len(zones))
	for start := 0; start < len(zones); {
		end := start
		for end < len(zones) && zones[end].Node == zones[start].Node {
			end++
		}
		node := zones[start:end]
		for i := range node {
			prot := make([]int64, len(node))
			var ratio int64
			if i < len(ratios) {
				ratio = ratios[i]
			}
			cleared := ratio <= 0 || node[i].Managed == 0
			var acc int64
			for j := i + 1; j < len(node); j++ {
				acc += node[j].Managed
				if !cleared {
					prot[j] = acc / ratio
				}
			}
			out[start+i] = prot
		}
		start = end
	}
	return out
}

// TotalReserve is totalreserve_pages: per zone min(max protection + high
// (with boost), managed), summed.
func TotalReserve(zones []Zone, marks []Marks, prot [][]int64) int64 {
	var total int64
	for i, z := range zones {
		var maxProt int64
		if i < len(prot) {
			for _, v := range prot[i] {
				maxProt = max(maxProt, v)
			}
		}
		total += min(maxProt+marks[i].High+z.Boost, z.Managed)
	}
	return total
}

// AvailableInput are the global counters si_mem_available reads, in pages.
type AvailableInput struct {
	FreePages int64 // Σ zone free (NR_FREE_PAGES)
	// FilePages is Active(file)+Inactive(file).
	FilePages int64
	// ReclaimablePages is SReclaimable plus NR_KERNEL_MISC_RECLAIMABLE
	// (meminfo KReclaimable).
	ReclaimablePages int64
}

// MemAvailable evaluates the upstream MemAvailable formula (pages) for the
// given watermarks:
//
//	free − totalreserve + F − min(F/2, ΣLow) + R − min(R/2, ΣLow), at least 0.
func MemAvailable(zones []Zone, marks []Marks, prot [][]int64, in AvailableInput) int64 {
	var wmarkLow int64
	for i, z := range zones {
		wmarkLow += marks[i].Low + z.Boost
	}
	avail := in.FreePages - TotalReserve(zones, marks, prot)
	avail += in.FilePages - min(in.FilePages/2, wmarkLow)
	avail += in.ReclaimablePages - min(in.ReclaimablePages/2, wmarkLow)
	return max(avail, 0)
}

// WhatIf is the effect of another watermark_scale_factor.
type WhatIf struct {
	WatermarkScaleFactor int64
	Marks                []Marks // per zone, static (add Boost to compare with zoneinfo)
	// MemAvailableDeltaPages is the change of the upstream MemAvailable
	// formula against the current setting (negative: less available).
	MemAvailableDeltaPages int64
	// TotalReservePages is totalreserve_pages under this setting.
	TotalReservePages int64
}

// Evaluate computes watermarks, totalreserve and the MemAvailable change
// for each scale factor, against p's current one.
func Evaluate(zones []Zone, p Params, in AvailableInput, factors []int64) []WhatIf {
	prot := Protection(zones, p.LowmemReserveRatio)
	base := MemAvailable(zones, Watermarks(zones, p), prot, in)
	out := make([]WhatIf, 0, len(factors))
	for _, f := range factors {
		q := p
		q.WatermarkScaleFactor = f
		m := Watermarks(zones, q)
		out = append(out, WhatIf{
			WatermarkScaleFactor:   f,
			Marks:                  m,
			MemAvailableDeltaPages: MemAvailable(zones, m, prot, in) - base,
			TotalReservePages:      TotalReserve(zones, m, prot),
		})
	}
	return out
}

// BootManagedDeficit explains watermarks that differ from the
// recomputation because the kernel computed them when fewer pages were
// managed: at boot (init_per_zone_wmark_min), before the initramfs and the
// kernel's init memory were freed. The kernel recomputes only when
// min_free_kbytes, watermark_scale_factor or lowmem_reserve_ratio is
// written (or memory is hotplugged). It returns the number of pages D that,
// taken from the largest lowmem zone, makes the recomputation give every
// zone's kernel marks exactly, or 0 when no D up to a quarter of that zone
// does. kernel holds the marks as stored (without boost), in zone order.
func BootManagedDeficit(zones []Zone, p Params, kernel []Marks) int64 {
	if len(kernel) != len(zones) {
		return 0
	}
	big := -1
	for i, z := range zones {
		if p.IsLowmem(z.Name) && (big < 0 || z.Managed > zones[big].Managed) {
			big = i
		}
	}
	if big < 0 || zones[big].Managed < 4 {
		return 0
	}
	try := func(d int64) (bigMin int64, all bool) {
		zs := append([]Zone(nil), zones...)
		zs[big].Managed -= d
		m := Watermarks(zs, p)
		all = true
		for i := range m {
			if m[i].Min != kernel[i].Min || m[i].Low != kernel[i].Low || m[i].High != kernel[i].High {
				all = false
				break
			}
		}
		return m[big].Min, all
	}
	// The big zone's min falls as D grows (its share of lowmem shrinks):
	// find the first D where it reaches the kernel's, then try the run of
	// D that keep it there.
	limit := zones[big].Managed / 4
	lo, hi := int64(1), limit
	for lo < hi {
		mid := (lo + hi) / 2
		if v, _ := try(mid); v > kernel[big].Min {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for d, n := lo, 0; d <= limit && n < 1<<16; d, n = d+1, n+1 {
		v, all := try(d)
		if all {
			return d
		}
		if v < kernel[big].Min {
			break
		}
	}
	return 0
}
