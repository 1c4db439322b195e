package diagnose

import "github.com/memdoctor/memdoctor/internal/model"

// Thresholds exposes the thresholds that commands explain to the user.
var Thresholds = struct {
	// memory_baseline_exceeded: the latest daily peak against the median
	// of the BaselineDays before.
	BaselineDays int
}{
	BaselineDays: model.BaselineDays,
}
