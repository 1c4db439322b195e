package diagnose

// Named thresholds of the trend rules. A rule's fleet pre-filter and
// alerting rules are built from the same constants in the rule's file, so
// that one number decides everywhere.
const (
	// slab_unreclaimable_growth fires from a growth of this share of
	// MemTotal per day and at least slabMinGrowth bytes in all.
	slabMinShareOfTotalPerDay = 0.001
	slabMinGrowth             = 64 << 20
	// available_memory_decline: a drop of at least this share of MemTotal
	// over the window, exhausting memory within declineMaxDays.
	declineMinDropShare = 0.02
	declineMaxDays      = 90
)

// Thresholds exposes the thresholds that commands explain to the user.
var Thresholds = struct {
	// memory_baseline_exceeded: the latest daily peak against the median
	// of the BaselineDays before.
	BaselineDays int
}{
	BaselineDays: baselineDays,
}

// AllocstallSeries are the direct-reclaim stall counters watermark_thrash
// sums (per zone on newer kernels, one counter on older ones).
func AllocstallSeries() []string { return append([]string(nil), allocstallSeries...) }
