package model

import "github.com/memdoctor/memdoctor/internal/vmcalc"

// ZoneReport is one zone: what the kernel reports and what the arithmetic
// predicts.
type ZoneReport struct {
	Node         int     `json:"node"`
	Zone         string  `json:"zone"`
	ManagedPages int64   `json:"managed_pages"`
	FreePages    int64   `json:"free_pages"`
	MinPages     int64   `json:"min_pages"`
	LowPages     int64   `json:"low_pages"`
	HighPages    int64   `json:"high_pages"`
	BoostPages   int64   `json:"boost_pages"`
	Protection   []int64 `json:"protection,omitempty"`
	// LowMinGapBytes is the kswapd window: low − min (= high − low).
	LowMinGapBytes int64 `json:"low_min_gap_bytes"`
	// Computed are the watermarks recomputed from the sysctls (boost added).
	Computed *Marks `json:"computed,omitempty"`
	// MatchesKernel is false when the recomputation differs from zoneinfo.
	MatchesKernel *bool    `json:"matches_kernel,omitempty"`
	WhatIf        []WhatIf `json:"what_if"`
}

// Marks are min/low/high pages.
type Marks struct {
	MinPages  int64 `json:"min_pages"`
	LowPages  int64 `json:"low_pages"`
	HighPages int64 `json:"high_pages"`
}

// WhatIf is one zone's watermarks under another watermark_scale_factor.
// MemAvailableDeltaBytes is the change of the host's MemAvailable (the
// kernel's formula), the same for every zone of the host.
type WhatIf struct {
	WatermarkScaleFactor   int64 `json:"watermark_scale_factor"`
	MinPages               int64 `json:"min_pages"`
	LowPages               int64 `json:"low_pages"`
	HighPages              int64 `json:"high_pages"`
	MemAvailableDeltaBytes int64 `json:"mem_available_delta_bytes"`
}

// Watermarks summarises the host's watermark settings.
type Watermarks struct {
	MinFreeKbytes        int64 `json:"min_free_kbytes"`
	WatermarkScaleFactor int64 `json:"watermark_scale_factor"`
	// EffectiveFrom is the smallest watermark_scale_factor that widens any
	// zone's gap; below it the gap is min/4 and the setting does nothing.
	EffectiveFrom int64 `json:"effective_from"`
	// Threshold is 2500 × min_free_kbytes / lowmem_kB, the same unrounded.
	Threshold float64 `json:"threshold"`
	// Recomputed is false when the sysctls were not available.
	Recomputed bool     `json:"recomputed"`
	Mismatches []string `json:"mismatches"`
	// BootDeficitPages, when the watermarks differ from the recomputation,
	// is how many fewer pages were managed when the kernel computed them
	// (at boot, before the initramfs and init memory were freed): with
	// that many fewer pages the recomputation matches exactly (0: it
	// does not explain them).
	BootDeficitPages int64 `json:"boot_deficit_pages,omitempty"`
	// TotalReservePages is totalreserve_pages reconstructed from zoneinfo.
	TotalReservePages int64 `json:"total_reserve_pages"`
	// Recommended is the suggested watermark_scale_factor (see
	// watermark_gap_small.go), with its predicted effect.
	Recommended *WhatIfHost `json:"recommended,omitempty"`

	// Calc is what the what-ifs are computed from (nil when the
	// watermarks could not be recomputed); not part of the JSON.
	Calc *WatermarkCalc `json:"-"`
}

// WhatIfHost is a host-wide what-if.
type WhatIfHost struct {
	WatermarkScaleFactor   int64 `json:"watermark_scale_factor"`
	MemAvailableDeltaBytes int64 `json:"mem_available_delta_bytes"`
	// LargestZone and its predicted gap in bytes.
	Zone           string `json:"zone"`
	LowMinGapBytes int64  `json:"low_min_gap_bytes"`
	MinPages       int64  `json:"min_pages"`
	LowPages       int64  `json:"low_pages"`
	HighPages      int64  `json:"high_pages"`
}

// Evaluate returns the host-wide effect of a scale factor on the largest
// lowmem zone, or nil when watermarks could not be recomputed.
func (w *Watermarks) Evaluate(wsf int64) *WhatIfHost {
	if !w.Recomputed || w.Calc == nil {
		return nil
	}
	c := w.Calc
	wi := vmcalc.Evaluate(c.Zones, c.Params, c.Avail, []int64{wsf})[0]
	big := -1
	for i, z := range c.Zones {
		if vmcalc.IsLowmem(z.Name) && (big < 0 || z.Managed > c.Zones[big].Managed) {
			big = i
		}
	}
	if big < 0 {
		return nil
	}
	m := wi.Marks[big]
	ps := int64(c.Params.PageSize)
	b := c.Zones[big].Boost
	return &WhatIfHost{WatermarkScaleFactor: wsf, MemAvailableDeltaBytes: wi.MemAvailableDeltaPages * ps,
		Zone: c.Zones[big].Name, LowMinGapBytes: m.Gap() * ps,
		MinPages: m.Min + b, LowPages: m.Low + b, HighPages: m.High + b}
}

// WatermarkCalc holds the zones and sysctls the watermarks were recomputed
// from, for Evaluate.
type WatermarkCalc struct {
	Zones  []vmcalc.Zone
	Params vmcalc.Params
	Avail  vmcalc.AvailableInput
}
