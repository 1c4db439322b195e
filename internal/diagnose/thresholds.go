package diagnose

import "time"

// Named thresholds of the trend rules, shared with what approximates them
// elsewhere (the fleet pre-filter, Prometheus alerting rules), so that one
// number decides everywhere.
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

// Thresholds exposes the rules' thresholds.
var Thresholds = struct {
	// dying_cgroups: growth of the memory cgroup count per day and in all.
	DyingCgroupsPerDay, DyingCgroupsMinGrowth float64
	// slab_unreclaimable_growth: per day, as a share of MemTotal; bytes in
	// all.
	SlabGrowthShareOfTotalPerDay, SlabMinGrowthBytes float64
	// available_memory_decline.
	DeclineMinDropShare, DeclineMaxDays float64
	// watermark_thrash: quick kswapd wake-ups and direct-reclaim stalls per
	// day.
	ThrashHitsPerDay, ThrashStallsPerDay float64
	// memory_baseline_exceeded: the latest daily peak above BaselineMargin
	// times the median of the BaselineDays before.
	BaselineDays   int
	BaselineMargin float64
	// TrendMinSpan is the shortest span a trend is fitted over.
	TrendMinSpan time.Duration
}{
	DyingCgroupsPerDay: dyingMinPerDay, DyingCgroupsMinGrowth: dyingMinGrowth,
	SlabGrowthShareOfTotalPerDay: slabMinShareOfTotalPerDay, SlabMinGrowthBytes: slabMinGrowth,
	DeclineMinDropShare: declineMinDropShare, DeclineMaxDays: declineMaxDays,
	ThrashHitsPerDay: thrashHitsPerDay, ThrashStallsPerDay: thrashStallsPerDay,
	BaselineDays: baselineDays, BaselineMargin: baselineMargin,
	TrendMinSpan: declineMinSpan,
}

// AllocstallSeries are the direct-reclaim stall counters watermark_thrash
// sums (per zone on newer kernels, one counter on older ones).
func AllocstallSeries() []string { return append([]string(nil), allocstallSeries...) }

// minEvidenceSeconds is the shortest span daily reclaim rates are
// extrapolated from (watermark_gap_small, watermark_thrash): below it the
// counts themselves are compared with the daily thresholds, and the
// findings say the span instead of a rate.
const minEvidenceSeconds = 3600
