package model

import (
	"github.com/memdoctor/memdoctor/internal/vmcalc"
)

// Target window, as a share of the zone and an absolute floor.
const (
	targetGapPercent = 2
	targetGapFloor   = 64 << 20
	targetGapCeiling = 512 << 20
	maxScaleFactor   = 1000
	maxCostPercent   = 10
)

// RecommendScaleFactor returns the recommended watermark_scale_factor for
// the host (never below the current one), or 0 when watermarks could not be
// recomputed.
func RecommendScaleFactor(h *Host) int64 {
	w := &h.Watermarks
	if !w.Recomputed || w.Calc == nil {
		return 0
	}
	cur := w.WatermarkScaleFactor
	best := int64(0)
	var bigManaged int64
	for _, z := range w.Calc.Zones {
		if vmcalc.IsLowmem(z.Name) && z.Managed > bigManaged {
			bigManaged = z.Managed
		}
	}
	if bigManaged == 0 {
		return 0
	}
	ps := int64(w.Calc.Params.PageSize)
	target := min(max(bigManaged*ps*targetGapPercent/100, targetGapFloor), targetGapCeiling)
	for f := int64(10); f <= maxScaleFactor; f += 10 {
		wi := w.Evaluate(f)
		if wi == nil {
			return 0
		}
		if -wi.MemAvailableDeltaBytes > h.Accounting.TotalBytes*maxCostPercent/100 {
			break
		}
		best = f
		if wi.LowMinGapBytes >= target {
			break
		}
	}
	return max(best, cur)
}
