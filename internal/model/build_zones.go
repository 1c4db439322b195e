package model

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/vmcalc"
)

// WhatIfFactors are the watermark_scale_factor values every report shows,
// after the current one.
var WhatIfFactors = []int64{50, 100, 200, 500}

// zoneIndex is the kernel's zone order on every architecture (absent zones
// are simply missing).
var zoneIndex = map[string]int{"DMA": 0, "DMA32": 1, "Normal": 2, "HighMem": 3, "Movable": 4, "Device": 5}

func zones(s *sample.Snapshot, pageSize int) ([]ZoneReport, Watermarks) {
	var out []ZoneReport
	for _, m := range s.Select("node_zoneinfo_managed_pages") {
		node, _ := strconv.Atoi(m.Labels.Get("node"))
		name := m.Labels.Get("zone")
		l := []string{"node", m.Labels.Get("node"), "zone", name}
		z := ZoneReport{Node: node, Zone: name, ManagedPages: int64(m.Value),
			MinPages:   int64(s.Value("node_zoneinfo_min_pages", l...)),
			LowPages:   int64(s.Value("node_zoneinfo_low_pages", l...)),
			HighPages:  int64(s.Value("node_zoneinfo_high_pages", l...)),
			BoostPages: int64(s.Value("memdoctor_zoneinfo_boost_pages", l...)),
		}
		if v, ok := s.Get("memdoctor_zoneinfo_free_pages", l...); ok {
			z.FreePages = int64(v)
		} else {
			z.FreePages = int64(s.Value("node_zoneinfo_nr_free_pages", l...))
		}
		for i := 0; ; i++ {
			v, ok := s.Get("node_zoneinfo_protection_"+strconv.Itoa(i), l...)
			if !ok {
				break
			}
			z.Protection = append(z.Protection, int64(v))
		}
		z.LowMinGapBytes = (z.LowPages - z.MinPages) * int64(pageSize)
		out = append(out, z)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return zoneIndex[out[i].Zone] < zoneIndex[out[j].Zone]
	})
	w := Watermarks{Mismatches: []string{}}
	mfk, ok1 := s.Get("node_sysctl_vm_min_free_kbytes")
	wsf, ok2 := s.Get("node_sysctl_vm_watermark_scale_factor")
	if len(out) == 0 || !ok1 || !ok2 {
		return out, w
	}
	var ratios []int64
	for i := 0; ; i++ {
		v, ok := s.Get("node_sysctl_vm_lowmem_reserve_ratio", "index", strconv.Itoa(i))
		if !ok {
			break
		}
		ratios = append(ratios, int64(v))
	}
	w.MinFreeKbytes, w.WatermarkScaleFactor, w.Recomputed = int64(mfk), int64(wsf), true
	vz := make([]vmcalc.Zone, len(out))
	var free int64
	for i, z := range out {
		vz[i] = vmcalc.Zone{Node: z.Node, Name: z.Zone, Managed: z.ManagedPages, Free: z.FreePages, Boost: z.BoostPages}
		free += z.FreePages
	}
	p := vmcalc.Params{MinFreeKbytes: w.MinFreeKbytes, WatermarkScaleFactor: w.WatermarkScaleFactor,
		LowmemReserveRatio: ratios, PageSize: pageSize}
	// The arithmetic follows the kernel that wrote the numbers.
	if u := s.Select("node_uname_info"); len(u) > 0 {
		if ma, mi, ok := kernelVersion(u[0].Labels.Get("release")); ok {
			p.MovableIsLowmem = vmcalc.MovableIsLowmemOn(ma, mi)
		}
	}
	ps := int64(pageSize)
	avail := vmcalc.AvailableInput{
		FreePages:        free,
		FilePages:        (mi(s, "Active_file") + mi(s, "Inactive_file")) / ps,
		ReclaimablePages: mi(s, "KReclaimable") / ps,
	}
	if !s.Has("node_memory_KReclaimable_bytes") {
		avail.ReclaimablePages = mi(s, "SReclaimable") / ps
	}
	w.Calc = &WatermarkCalc{Zones: vz, Params: p, Avail: avail}
	w.EffectiveFrom = vmcalc.EffectiveFrom(vz, p)
	w.Threshold = vmcalc.ScaleFactorThreshold(vz, p)
	marks := vmcalc.Watermarks(vz, p)
	prot := vmcalc.Protection(vz, ratios)
	w.TotalReservePages = vmcalc.TotalReserve(vz, marks, prot)
	factors := append([]int64{w.WatermarkScaleFactor}, WhatIfFactors...)
	whatifs := vmcalc.Evaluate(vz, p, avail, factors)
	for i := range out {
		z := &out[i]
		c := Marks{MinPages: marks[i].Min + z.BoostPages, LowPages: marks[i].Low + z.BoostPages, HighPages: marks[i].High + z.BoostPages}
		z.Computed = &c
		match := c.MinPages == z.MinPages && c.LowPages == z.LowPages && c.HighPages == z.HighPages
		if !match {
			w.Mismatches = append(w.Mismatches, fmt.Sprintf("node %d %s: kernel min/low/high %d/%d/%d, recomputed %d/%d/%d",
				z.Node, z.Zone, z.MinPages, z.LowPages, z.HighPages, c.MinPages, c.LowPages, c.HighPages))
		}
		if len(z.Protection) > 0 && len(ratios) > 0 {
			for j, v := range z.Protection {
				if j < len(prot[i]) && prot[i][j] != v {
					match = false
					w.Mismatches = append(w.Mismatches, fmt.Sprintf("node %d %s: kernel protection[%d] %d, recomputed %d",
						z.Node, z.Zone, j, v, prot[i][j]))
					break
				}
			}
		}
		z.MatchesKernel = &match
		for _, wi := range whatifs {
			m := wi.Marks[i]
			z.WhatIf = append(z.WhatIf, WhatIf{WatermarkScaleFactor: wi.WatermarkScaleFactor,
				MinPages: m.Min + z.BoostPages, LowPages: m.Low + z.BoostPages, HighPages: m.High + z.BoostPages,
				MemAvailableDeltaBytes: wi.MemAvailableDeltaPages * ps})
		}
	}
	if len(w.Mismatches) > 0 {
		kernel := make([]vmcalc.Marks, len(out))
		for i, z := range out {
			kernel[i] = vmcalc.Marks{Min: z.MinPages - z.BoostPages, Low: z.LowPages - z.BoostPages, High: z.HighPages - z.BoostPages}
		}
		w.BootDeficitPages = vmcalc.BootManagedDeficit(vz, p, kernel)
	}
	return out, w
}

// kernelVersion reads major and minor from a release ("6.1.0-56-amd64").
func kernelVersion(release string) (major, minor int, ok bool) {
	f := strings.FieldsFunc(release, func(r rune) bool { return r == '.' || r == '-' || r == '+' || r == '_' })
	if len(f) < 2 {
		return 0, 0, false
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	return ma, mi, err1 == nil && err2 == nil
}

// KernelAtLeast reports whether a release string ("5.3.0-26-generic") is at
// least major.minor. Unparseable releases report false.
func KernelAtLeast(release string, major, minor int) bool {
	f := strings.FieldsFunc(release, func(r rune) bool { return r == '.' || r == '-' || r == '+' || r == '_' })
	if len(f) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}
