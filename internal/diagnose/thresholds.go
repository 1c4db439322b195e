package diagnose

import "github.com/memdoctor/memdoctor/internal/model"

// Thresholds exposes the thresholds that commands explain to the user.
var Thresholds = struct {
	// memory_baseline_exceeded: the latest daily peak against the median
	// of the BaselineDays before.
	BaselineDays int
}{
	BaselineDays: baselineDays,
}

// minEvidenceSeconds is the shortest span daily reclaim rates are
// extrapolated from (watermark_gap_small, watermark_thrash): below it the
// counts themselves are compared with the daily thresholds, and the
// findings say the span instead of a rate.
const minEvidenceSeconds = model.MinEvidenceSeconds
