package model

import (
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// MinEvidenceSeconds is the shortest span daily reclaim rates are
// extrapolated from (Reclaim.Judged; the rules watermark_gap_small and
// watermark_thrash): below it the counts themselves are compared with the
// daily thresholds, and findings say the span instead of a rate.
const MinEvidenceSeconds = 3600

// Host is the model of one host at one instant, derived from samples only.
type Host struct {
	S *sample.Snapshot `json:"-"`

	Info       HostInfo     `json:"host"`
	Accounting Accounting   `json:"accounting"`
	Zones      []ZoneReport `json:"zones"`
	Watermarks Watermarks   `json:"watermarks"`
	Cgroups    Cgroups      `json:"cgroups"`
	Slab       SlabReport   `json:"slab"`
	Processes  []Process    `json:"processes"`
	Reclaim    Reclaim      `json:"reclaim"`
	// Runtimes are the language runtimes' garbage collectors (scraped,
	// read from JVM perf-data, or only detected).
	Runtimes []Runtime `json:"runtimes,omitempty"`
	// Users are per-user totals (check --users), largest PSS first.
	Users []UserTotal `json:"users,omitempty"`
}

// UserTotal sums one user's processes, as smem -u does.
type UserTotal struct {
	UID       int    `json:"uid"`
	User      string `json:"user"`
	Processes int64  `json:"processes"`
	// Unread counts processes whose smaps_rollup could not be read: their
	// PSS and USS are missing from the sums (RSS and swap are not).
	Unread    int64 `json:"processes_unread"`
	RSSBytes  int64 `json:"rss_bytes"`
	PSSBytes  int64 `json:"pss_bytes"`
	USSBytes  int64 `json:"uss_bytes"`
	SwapBytes int64 `json:"swap_bytes"`
}

// HostInfo identifies the host.
type HostInfo struct {
	Hostname      string    `json:"hostname"`
	Kernel        string    `json:"kernel"`
	Arch          string    `json:"arch"`
	PageSize      int       `json:"page_size"`
	Glibc         string    `json:"glibc,omitempty"`
	Time          time.Time `json:"time"`
	UptimeSeconds float64   `json:"uptime_seconds,omitempty"`
	CPUs          int       `json:"cpus,omitempty"`
	Source        string    `json:"source"`
}

// Process is one process' memory.
type Process struct {
	PID          int    `json:"pid"`
	Comm         string `json:"comm"`
	RSSBytes     int64  `json:"rss_bytes"`
	PSSBytes     *int64 `json:"pss_bytes"`
	USSBytes     *int64 `json:"uss_bytes"`
	SwapBytes    int64  `json:"swap_bytes"`
	AnonBytes    int64  `json:"anon_bytes"`
	FileBytes    int64  `json:"file_bytes"`
	ShmemBytes   int64  `json:"shmem_bytes"`
	Threads      int64  `json:"threads"`
	MallocArenas *int64 `json:"malloc_arenas,omitempty"`
	// ArenaMax is the glibc arena cap the process was started with
	// (MALLOC_ARENA_MAX or GLIBC_TUNABLES glibc.malloc.arena_max), nil when
	// it runs with glibc's default.
	ArenaMax *int64 `json:"malloc_arena_max,omitempty"`
	// Allocator serves the process' malloc: glibc, jemalloc, tcmalloc,
	// mimalloc, musl or other ("" when not known); AllocatorObject is the
	// object that defines the malloc it binds to.
	Allocator       string `json:"allocator,omitempty"`
	AllocatorObject string `json:"allocator_object,omitempty"`
	// Preload is set when the process maps memdoctor's preload library.
	Preload bool `json:"preload,omitempty"`
	// Malloc is the allocator's own view, when it was read (memdoctor's
	// preload library, or check --malloc).
	Malloc *MallocState `json:"malloc,omitempty"`
}

// MallocState is a process' heap as its allocator sees it (glibc's, or
// jemalloc's or tcmalloc's).
type MallocState struct {
	SystemBytes int64 `json:"system_bytes"`
	InUseBytes  int64 `json:"in_use_bytes"`
	FreeBytes   int64 `json:"free_bytes"`
	// RetainedBytes is free heap memory still resident: what malloc_trim
	// could give back.
	RetainedBytes int64 `json:"retained_bytes"`
	Arenas        int64 `json:"arena_count"`
	// TrimSeconds is how long the last trim took, when known.
	TrimSeconds *float64 `json:"trim_seconds,omitempty"`
	// Settings are the settings of jemalloc or tcmalloc that decide
	// whether it gives freed memory back by itself (background_thread 0
	// or 1, dirty_decay_ms, muzzy_decay_ms, release_rate), when it was
	// read through its own functions (check --malloc). For those, system
	// is what the allocator holds resident, in use what is allocated, and
	// retained its free pages that a purge or release gives back.
	Settings map[string]float64 `json:"settings,omitempty"`
}

// Reclaim are the reclaim counters since boot and their daily rates.
type Reclaim struct {
	KswapdLowWmarkHitQuickly  float64 `json:"kswapd_low_wmark_hit_quickly"`
	KswapdHighWmarkHitQuickly float64 `json:"kswapd_high_wmark_hit_quickly"`
	Allocstall                float64 `json:"allocstall"`
	PgscanDirect              float64 `json:"pgscan_direct"`
	PgscanKswapd              float64 `json:"pgscan_kswapd"`
	CompactStall              float64 `json:"compact_stall"`
	OOMKill                   float64 `json:"oom_kill"`
	// PerDay divides each counter's increase over Seconds by that span
	// (nil when it is unknown): since boot for one snapshot; over the newest
	// boot, since the last change of watermark_scale_factor, for a time
	// range (the span watermark_thrash judges, so both rules show the same
	// rates). Counts are those increases.
	PerDay  map[string]float64 `json:"per_day,omitempty"`
	Counts  map[string]float64 `json:"counts,omitempty"`
	Seconds float64            `json:"span_seconds,omitempty"`
	// PSI memory "some" average over 60 s, percent (-1 when unavailable).
	PSISomeAvg60 float64 `json:"psi_some_avg60_percent"`
	PSIFullAvg60 float64 `json:"psi_full_avg60_percent"`
	// PSISomeTotalSeconds and PSIFullTotalSeconds are the PSI memory stall
	// totals since boot (/proc/pressure/memory total=, in seconds): some
	// task waiting on memory, and every non-idle task at once; nil when
	// unavailable.
	PSISomeTotalSeconds *float64 `json:"psi_some_total_seconds,omitempty"`
	PSIFullTotalSeconds *float64 `json:"psi_full_total_seconds,omitempty"`
	// PSISomePercent and PSIFullPercent are the share of Seconds, in
	// percent, that those totals grew over a time range (the span of
	// PerDay): the stall share over the whole recording, not the last
	// minute's avg60. Nil for one reading and when PSI was not recorded.
	PSISomePercent *float64 `json:"psi_some_percent,omitempty"`
	PSIFullPercent *float64 `json:"psi_full_percent,omitempty"`
}

// Short reports whether the span is too short to extrapolate daily rates
// from (MinEvidenceSeconds).
func (r *Reclaim) Short() bool { return r.Seconds < MinEvidenceSeconds }

// Judged is the value of counter k compared with a per-day threshold: its
// daily rate over a span of at least MinEvidenceSeconds; over a shorter
// span the count itself, a lower bound of the day's count (one stall in
// 40 s is one stall, not 2000 a day).
func (r *Reclaim) Judged(k string) float64 {
	if r.PerDay == nil {
		return 0
	}
	if r.Short() {
		return r.Counts[k]
	}
	return r.PerDay[k]
}
