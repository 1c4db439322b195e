// Package rightsize recommends a container's memory request and limit from
// the mechanism of its memory over a time range, instead of from its usage
// or working set: what its reclaim cannot take back (anon, shmem and the
// kernel's unreclaimable part, model.OOMMemory of each sample), plus the
// page cache it was measured to need (mapped files, dirty pages, refaults,
// pressure stalls), plus what the runtime inside asks for up front (a JVM
// with a fixed heap). It says which runtime settings must move with the
// limit, how sure it is, and refuses when the data is too short or the
// container leaks. Beside it, what the common rule (Robusta KRR: the
// highest working set seen plus 15%) would set, and whether the data says
// that limit would have OOM-killed the container or wasted memory.
//
// It judges data only: the use cases read a recording or a Prometheus
// into Containers, and render/text prints the Report.
package rightsize

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/stats"
)

// The choices, stated (docs/rightsize.md explains each).
const (
	// RequestQuantile is the quantile of the unreclaimable memory over the
	// range the request holds: what the container needs nearly always.
	RequestQuantile = 0.99
	// LimitHeadroom multiplies the highest unreclaimable memory seen for
	// the limit, at least LimitHeadroomMin above it: a peak a little above
	// the range's is not an OOM kill.
	LimitHeadroom    = 1.20
	LimitHeadroomMin = 32 << 20
	// KRRHeadroom is the common rule's: the highest working set seen
	// plus 15% (Robusta KRR's simple strategy).
	KRRHeadroom = 1.15
	// MinSamples is the fewest samples a recommendation is made from.
	MinSamples = 10
	// RefaultWindow is how long a refault rate is taken for: the page
	// cache that was evicted while still in use and read back within this
	// time is cache the container needs. The rate is the median of the
	// range's (RefaultQuantile): refaulting that lasts, not a burst.
	RefaultWindow   = 5 * time.Minute
	RefaultQuantile = 0.5
	// PressureShare is the share of the range the container's tasks may
	// stall on memory (PSI some) before its active page cache counts as
	// needed: above it, reclaim was already taking cache it used.
	PressureShare = 0.01
	// LeakRise: the unreclaimable memory's median rises every quarter of
	// the range and by at least this share of the first quarter's, and by
	// LeakMinBytes: a leak, refused.
	// Each quarter's rise is at least LeakSteady of the whole rise: steady
	// growth, not a warm-up that flattens.
	LeakRise     = 0.10
	LeakMinBytes = 32 << 20
	LeakSteady   = 0.10
	// WasteFactor: the common rule's limit above this many times the need
	// (unreclaimable peak + page cache need), and WasteMinBytes above it,
	// is memory wasted.
	WasteFactor   = 1.5
	WasteMinBytes = 64 << 20
	// JVMNonHeapHeadroom multiplies a JVM's heap maximum plus what it
	// holds besides the heap; JVMNonHeapMin is the least taken for what it
	// holds besides (metaspace, code cache, thread stacks, the collector's
	// structures) when the data cannot tell: the heap in use the JVM
	// reports counts whole regions, more than it touched.
	JVMNonHeapHeadroom = 1.10
	JVMNonHeapMin      = 48 << 20
	// FixedHeapShare: a JVM whose committed heap reached this share of its
	// maximum took its heap up front (-Xms = -Xmx).
	FixedHeapShare = 0.98
	// GoMemLimitShare is the share of the limit GOMEMLIMIT is set to: the
	// Go collector works harder before the kernel's limit is reached.
	GoMemLimitShare = 0.90
	// DotNetHeapShare is the share of the limit GCHeapHardLimit is set to
	// (.NET's own default in a container).
	DotNetHeapShare = 0.75
	// ArenasMany is the glibc arena count from which MALLOC_ARENA_MAX is
	// advised; ArenaMax the value advised.
	ArenasMany = 8
	ArenaMax   = 2
	// PageBytes is the size of the pages workingset_refault_file counts.
	PageBytes = 4096
)

// Step is one sample of a container: its charge split by model.OOMMemoryOf
// (the one formula), and the counters read beside it.
type Step struct {
	T time.Time
	M model.OOMMemory
	// MappedBytes is page cache mapped by its processes (code, mmaps):
	// in use whenever they run. NaN when not read.
	MappedBytes float64
	// RefaultPages is memory.stat's cumulative workingset_refault_file;
	// PressureSeconds the cumulative PSI some stall time (memory.pressure).
	// NaN when not read.
	RefaultPages    float64
	PressureSeconds float64
	// HeapUsedBytes is the in-use heap of the JVMs in the container at
	// this time; NaN when not read.
	HeapUsedBytes float64
}

// Runtime is a language runtime seen in the container.
type Runtime struct {
	// Kind is the runtime's name (internal/runtimes: jvm, go, dotnet, ...).
	Kind string `json:"runtime"`
	PID  int    `json:"pid,omitempty"`
	Comm string `json:"comm,omitempty"`
	// HeapLimitBytes is the configured heap maximum (JVM -Xmx or its
	// MaxRAMPercentage share; Go GOMEMLIMIT; .NET's hard limit), 0 when
	// not known; HeapCommittedMaxBytes the most heap it held from the OS.
	HeapLimitBytes        int64 `json:"heap_limit_bytes,omitempty"`
	HeapCommittedMaxBytes int64 `json:"heap_committed_max_bytes,omitempty"`
}

// Arenas is a glibc process of the container with its arena count.
type Arenas struct {
	PID      int    `json:"pid"`
	Comm     string `json:"comm,omitempty"`
	Arenas   int    `json:"arenas"`
	ArenaMax int    `json:"arena_max,omitempty"` // MALLOC_ARENA_MAX when set
}

// Container is what was read of one container over the range.
type Container struct {
	// Name is how people call it (namespace/pod/container, a unit, a
	// cgroup path); Namespace, Pod and Container are set for a pod's.
	Name      string
	Cgroup    string
	Namespace string
	Pod       string
	Container string
	Steps     []Step
	// Coarse says the split comes from cadvisor (rss as anon, cache as
	// file, the working set): no shmem, kernel or refaults apart.
	Coarse bool
	// OOMKills and Restarts seen over the range; -1 when not read.
	OOMKills float64
	Restarts float64
	// LimitBytes is the limit it runs with now (0: none).
	LimitBytes int64
	Runtimes   []Runtime
	Arenas     []Arenas
}

// Options are the caller's choices.
type Options struct {
	// MinRange is the shortest range recommended from.
	MinRange time.Duration
}

// Report is every container's recommendation.
type Report struct {
	Source    string           `json:"source"`
	From      time.Time        `json:"from"`
	To        time.Time        `json:"to"`
	MinRange  string           `json:"min_range"`
	Choices   string           `json:"choices"`
	Items     []Recommendation `json:"containers"`
	Notes     []string         `json:"notes,omitempty"`
	Queries   int64            `json:"queries,omitempty"`
	Truncated bool             `json:"truncated,omitempty"`
}

// Choices says the rule in one line, for the report's head.
func Choices() string {
	return fmt.Sprintf("request = p%.0f of the unreclaimable memory + the page cache need; limit = max(the highest unreclaimable × %.2f, it + %s) + the page cache need; a JVM's limit holds its whole heap; the common rule = the highest working set × %.2f",
		RequestQuantile*100, LimitHeadroom, format.Bytes(LimitHeadroomMin), KRRHeadroom)
}

// Recommendation is one container's.
type Recommendation struct {
	Name      string `json:"name"`
	Cgroup    string `json:"cgroup,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// Refused says why no recommendation is made (too little data, a
	// leak); Leak is the leak's finding when that is why.
	Refused string         `json:"refused,omitempty"`
	Leak    *model.Finding `json:"leak,omitempty"`

	RequestBytes int64 `json:"request_bytes,omitempty"`
	LimitBytes   int64 `json:"limit_bytes,omitempty"`
	// CurrentLimitBytes is the limit it runs with (0: none).
	CurrentLimitBytes int64 `json:"current_limit_bytes,omitempty"`

	// What the recommendation was made from.
	UnreclaimableP99Bytes int64 `json:"unreclaimable_p99_bytes"`
	UnreclaimableMaxBytes int64 `json:"unreclaimable_max_bytes"`
	WorkingSetMaxBytes    int64 `json:"working_set_max_bytes"`
	PageCacheMaxBytes     int64 `json:"page_cache_max_bytes"`
	// CacheNeedBytes is the page cache it was measured to need, and
	// CacheWhy how.
	CacheNeedBytes int64  `json:"page_cache_need_bytes"`
	CacheWhy       string `json:"page_cache_need"`
	// RuntimeNeedBytes is what a runtime asks for regardless of the data
	// (a JVM's heap maximum plus its memory besides the heap); 0 none.
	RuntimeNeedBytes int64     `json:"runtime_need_bytes,omitempty"`
	Settings         []Setting `json:"settings,omitempty"`

	Confidence Confidence `json:"confidence"`
	Common     Common     `json:"common_rule"`
	Coarse     bool       `json:"coarse,omitempty"`
	Notes      []string   `json:"notes,omitempty"`
}

// Setting is a runtime setting that must move with the limit.
type Setting struct {
	Runtime string `json:"runtime"`
	PID     int    `json:"pid,omitempty"`
	Comm    string `json:"comm,omitempty"`
	// Name and Value as they are written (an option or an environment
	// variable); Was the value seen, when known; Why one line.
	Name  string `json:"name"`
	Value string `json:"value"`
	Was   string `json:"was,omitempty"`
	Why   string `json:"why"`
}

// Confidence is how much the data says.
type Confidence struct {
	Level    string  `json:"level"` // high, medium, low
	Seconds  float64 `json:"range_seconds"`
	Samples  int     `json:"samples"`
	OOMKills float64 `json:"oom_kills"` // -1: not read
	Restarts float64 `json:"restarts"`  // -1: not read
	Why      string  `json:"why"`
}

// Common is what the common rule would set and what the data says of it.
type Common struct {
	LimitBytes int64 `json:"limit_bytes"`
	// Verdict is oom (the data holds more than reclaim could free below
	// it), waste (far above what was needed) or fits.
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}

// Verdicts of the common rule.
const (
	VerdictOOM   = "oom"
	VerdictWaste = "waste"
	VerdictFits  = "fits"
)

// Recommend makes one container's recommendation.
func Recommend(c *Container, o Options) Recommendation {
	r := Recommendation{Name: c.Name, Cgroup: c.Cgroup, Namespace: c.Namespace, Pod: c.Pod, Container: c.Container,
		CurrentLimitBytes: c.LimitBytes, Coarse: c.Coarse}
	steps := c.Steps
	span := time.Duration(0)
	if len(steps) > 1 {
		span = steps[len(steps)-1].T.Sub(steps[0].T)
	}
	r.Confidence = Confidence{Seconds: span.Seconds(), Samples: len(steps), OOMKills: c.OOMKills, Restarts: c.Restarts}
	if len(steps) < MinSamples || span < o.MinRange {
		r.Refused = fmt.Sprintf("too little data: %d samples over %s; a recommendation needs at least %d samples over %s (--min-range): record longer (memdoctor record), or give a longer --range",
			len(steps), format.Clock(span), MinSamples, format.Clock(o.MinRange))
		r.Confidence.Level, r.Confidence.Why = "none", "too little data"
		return r
	}
	unrecl := make([]float64, len(steps))
	var maxU, maxWS, maxCache int64
	for i, s := range steps {
		unrecl[i] = float64(s.M.UnreclaimableBytes)
		maxU = max(maxU, s.M.UnreclaimableBytes)
		maxWS = max(maxWS, s.M.WorkingSetBytes)
		maxCache = max(maxCache, s.M.ActiveFileBytes+s.M.InactiveFileBytes)
	}
	r.UnreclaimableP99Bytes = int64(stats.Quantile(unrecl, RequestQuantile))
	r.UnreclaimableMaxBytes, r.WorkingSetMaxBytes, r.PageCacheMaxBytes = maxU, maxWS, maxCache
	if f := leak(c, steps, unrecl); f != nil {
		r.Leak = f
		r.Refused = "leak: " + f.Summary + "; a bigger limit only delays the OOM kill"
		r.Confidence.Level, r.Confidence.Why = "none", "the container leaks"
		r.Common = common(maxWS, maxU, 0, 0, nil)
		return r
	}
	r.CacheNeedBytes, r.CacheWhy = cacheNeed(steps, c.Coarse)
	request := r.UnreclaimableP99Bytes + r.CacheNeedBytes
	limit := max(int64(float64(maxU)*LimitHeadroom), maxU+LimitHeadroomMin) + r.CacheNeedBytes
	jvm := jvmNeed(c, steps)
	if jvm != nil {
		r.RuntimeNeedBytes = jvm.need
		request = max(request, jvm.need+r.CacheNeedBytes)
		limit = max(limit, int64(float64(jvm.need)*JVMNonHeapHeadroom)+r.CacheNeedBytes, jvm.need+LimitHeadroomMin+r.CacheNeedBytes)
	}
	r.RequestBytes, r.LimitBytes = roundMiB(request), roundMiB(limit)
	r.Settings = settings(c, r.LimitBytes, jvm)
	r.Confidence.Level, r.Confidence.Why = confidence(span, c)
	if c.OOMKills > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("OOM-killed %s in the range: the peak seen was cut by the limit it had (%s), so the need may be higher",
			format.Count(c.OOMKills, "time", "times"), limitText(c.LimitBytes)))
	}
	if c.Coarse {
		r.Notes = append(r.Notes, "from cadvisor: rss is taken as what reclaim cannot free and cache as page cache; shmem (tmpfs) is counted in cache, the kernel's part is usage less rss and cache, and no refaults are recorded: record the node with memdoctor for the full split")
	}
	r.Common = common(maxWS, maxU, r.CacheNeedBytes, r.RuntimeNeedBytes, jvm)
	return r
}

// Recommend makes every container's recommendation, sorted by name.
func (o Options) Recommend(cs []*Container) []Recommendation {
	out := make([]Recommendation, 0, len(cs))
	for _, c := range cs {
		out = append(out, Recommend(c, o))
	}
	slices.SortStableFunc(out, func(a, b Recommendation) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func roundMiB(b int64) int64 {
	const mib = 1 << 20
	return (b + mib - 1) / mib * mib
}

func limitText(b int64) string {
	if b <= 0 {
		return "none"
	}
	return format.Bytes(b)
}

// leak: the median of the unreclaimable memory of each quarter of the
// range rises every quarter by LeakSteady of the whole rise at least, and
// by LeakRise and LeakMinBytes overall.
func leak(c *Container, steps []Step, unrecl []float64) *model.Finding {
	from, to := steps[0].T, steps[len(steps)-1].T
	q := to.Sub(from) / 4
	if q <= 0 {
		return nil
	}
	var meds [4]float64
	for i := range meds {
		var part []float64
		for j, s := range steps {
			k := int(s.T.Sub(from) / q)
			if k == i || (i == 3 && k == 4) {
				part = append(part, unrecl[j])
			}
		}
		if len(part) == 0 {
			return nil
		}
		meds[i] = stats.Median(part)
	}
	rise := meds[3] - meds[0]
	if rise < LeakRise*meds[0] || rise < LeakMinBytes {
		return nil
	}
	for i := 1; i < 4; i++ {
		if meds[i]-meds[i-1] < LeakSteady*rise {
			return nil
		}
	}
	perHour := rise / (to.Sub(from).Hours() * 3 / 4)
	f := &model.Finding{ID: "rightsize_leak", Severity: model.Warning, Subject: c.Name,
		Summary: fmt.Sprintf("what reclaim cannot free grew every quarter of the range: medians %s → %s → %s → %s (%s an hour)",
			format.Bytes(int64(meds[0])), format.Bytes(int64(meds[1])), format.Bytes(int64(meds[2])), format.Bytes(int64(meds[3])), format.Bytes(int64(perHour))),
		Evidence: []model.Evidence{
			{Name: "unreclaimable_first_quarter_median", Value: meds[0], Unit: "bytes"},
			{Name: "unreclaimable_last_quarter_median", Value: meds[3], Unit: "bytes"},
			{Name: "unreclaimable_growth", Value: perHour * 24, Unit: "per_day"},
		},
		Remedies: []model.Remedy{{Title: "find what grows before sizing: a diagnosis of the same data names the growing process, and memdoctor leaks profiles its heap",
			Risk: "none: nothing is changed"}},
	}
	return f
}

// cacheNeed is the page cache the container was measured to need: what
// its processes map (in use whenever they run), its dirty and writeback
// pages (freed only once written), the cache read back after eviction
// within RefaultWindow (the refault rate's p99), and, when its tasks
// stalled on memory more than PressureShare of the time, its active page
// cache. Inactive page cache never counts: it is used once.
func cacheNeed(steps []Step, coarse bool) (int64, string) {
	var mapped, dirty, active []float64
	for _, s := range steps {
		mapped = append(mapped, s.MappedBytes)
		dirty = append(dirty, float64(s.M.DirtyBytes))
		active = append(active, float64(s.M.ActiveFileBytes))
	}
	m, d := nz(stats.Quantile(mapped, RequestQuantile)), nz(stats.Quantile(dirty, RequestQuantile))
	var rates []float64
	var stalled, elapsed float64
	for i := 1; i < len(steps); i++ {
		a, b := steps[i-1], steps[i]
		dt := b.T.Sub(a.T).Seconds()
		if dt <= 0 {
			continue
		}
		if dr := b.RefaultPages - a.RefaultPages; !math.IsNaN(dr) && dr >= 0 { // a reset (a new cgroup) is no refault
			rates = append(rates, dr*PageBytes/dt)
		}
		if dp := b.PressureSeconds - a.PressureSeconds; !math.IsNaN(dp) && dp >= 0 {
			stalled += dp
			elapsed += dt
		}
	}
	need := m + d
	why := fmt.Sprintf("mapped %s + dirty %s", format.Bytes(int64(m)), format.Bytes(int64(d)))
	if len(rates) > 0 {
		rf := nz(stats.Quantile(rates, RefaultQuantile)) * RefaultWindow.Seconds()
		need += rf
		why += fmt.Sprintf(" + refaulted within %s %s", format.Clock(RefaultWindow), format.Bytes(int64(rf)))
	} else if coarse {
		why += " (no refaults recorded)"
	} else {
		why += " (workingset_refault_file not recorded)"
	}
	if elapsed > 0 {
		share := stalled / elapsed
		if share > PressureShare {
			a := nz(stats.Quantile(active, 0.95))
			need += a
			why += fmt.Sprintf(" + active page cache %s (stalled on memory %.1f%% of the time)", format.Bytes(int64(a)), share*100)
		} else {
			why += fmt.Sprintf("; stalled on memory %.2f%% of the time", share*100)
		}
	}
	return int64(need), why
}

func nz(v float64) float64 {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	return v
}

// jvm is what a JVM asks for: its heap maximum, taken in full whatever
// the range touched (a JVM grows to -Xmx before collecting fully; with
// -Xms = -Xmx it holds it from the start), plus what it holds besides.
type jvm struct {
	heap, nonHeap, need int64
	fixed               bool
	rt                  Runtime
}

func jvmNeed(c *Container, steps []Step) *jvm {
	var j *jvm
	for _, rt := range c.Runtimes {
		if rt.Kind != "jvm" || rt.HeapLimitBytes <= 0 {
			continue
		}
		if j == nil || rt.HeapLimitBytes > j.heap {
			j = &jvm{heap: rt.HeapLimitBytes, rt: rt,
				fixed: float64(rt.HeapCommittedMaxBytes) >= FixedHeapShare*float64(rt.HeapLimitBytes)}
		}
	}
	if j == nil {
		return nil
	}
	// Besides the heap: the unreclaimable memory less the heap in use at
	// the same time (more than the JVM's own non-heap by the heap touched
	// but free: on the safe side).
	var non []float64
	for _, s := range steps {
		if !math.IsNaN(s.HeapUsedBytes) {
			non = append(non, float64(s.M.UnreclaimableBytes)-s.HeapUsedBytes)
		}
	}
	if len(non) > 0 {
		j.nonHeap = int64(nz(stats.Quantile(non, RequestQuantile)))
	}
	j.nonHeap = max(j.nonHeap, JVMNonHeapMin)
	j.need = j.heap + j.nonHeap
	return j
}

// settings are the runtime settings that must move with the limit.
func settings(c *Container, limit int64, j *jvm) []Setting {
	var out []Setting
	seen := map[string]bool{}
	for _, rt := range c.Runtimes {
		switch rt.Kind {
		case "jvm":
			if j == nil || rt.PID != j.rt.PID || seen["jvm"] {
				continue
			}
			seen["jvm"] = true
			pct := int(math.Floor(float64(j.heap) / float64(limit) * 100))
			s := Setting{Runtime: rt.Kind, PID: rt.PID, Comm: rt.Comm, Name: "-Xmx", Value: mibArg(j.heap), Was: mibArg(j.heap)}
			if j.fixed {
				s.Why = fmt.Sprintf("keep the heap at %s: with -Xms = -Xmx the JVM takes its heap up front, so the limit holds it and %s besides (or -XX:MaxRAMPercentage=%d without -Xmx)",
					format.Bytes(j.heap), format.Bytes(j.nonHeap), pct)
			} else {
				s.Why = fmt.Sprintf("the heap may grow to %s before a full collection, so the limit holds it and %s besides (or -XX:MaxRAMPercentage=%d without -Xmx)",
					format.Bytes(j.heap), format.Bytes(j.nonHeap), pct)
			}
			out = append(out, s)
		case "go":
			if seen["go"] {
				continue
			}
			seen["go"] = true
			v := int64(float64(limit) * GoMemLimitShare)
			s := Setting{Runtime: rt.Kind, PID: rt.PID, Comm: rt.Comm, Name: "GOMEMLIMIT", Value: fmt.Sprintf("%dMiB", v>>20),
				Why: fmt.Sprintf("%.0f%% of the limit: the Go collector works harder before the kernel's limit, instead of the OOM killer", GoMemLimitShare*100)}
			if rt.HeapLimitBytes > 0 {
				s.Was = fmt.Sprintf("%dMiB", rt.HeapLimitBytes>>20)
				if rt.HeapLimitBytes > limit {
					s.Why += fmt.Sprintf("; the GOMEMLIMIT set now (%s) is above the new limit: the runtime would let the heap grow into the OOM kill", format.Bytes(rt.HeapLimitBytes))
				}
			}
			out = append(out, s)
		case "dotnet":
			if seen["dotnet"] {
				continue
			}
			seen["dotnet"] = true
			v := int64(float64(limit) * DotNetHeapShare)
			s := Setting{Runtime: rt.Kind, PID: rt.PID, Comm: rt.Comm, Name: "DOTNET_GCHeapHardLimit", Value: fmt.Sprintf("0x%x", v),
				Why: fmt.Sprintf("%.0f%% of the limit (%s), the runtime's own share in a container, said explicitly so the heap follows the new limit", DotNetHeapShare*100, format.Bytes(v))}
			if rt.HeapLimitBytes > 0 {
				s.Was = fmt.Sprintf("0x%x", rt.HeapLimitBytes)
			}
			out = append(out, s)
		}
	}
	for _, a := range c.Arenas {
		if a.Arenas < ArenasMany || (a.ArenaMax > 0 && a.ArenaMax <= ArenaMax) || seen["arenas"] {
			continue
		}
		seen["arenas"] = true
		s := Setting{Runtime: "glibc", PID: a.PID, Comm: a.Comm, Name: "MALLOC_ARENA_MAX", Value: fmt.Sprint(ArenaMax),
			Why: fmt.Sprintf("%d malloc arenas measured: each keeps the memory its threads freed, which the limit would have to hold", a.Arenas)}
		if a.ArenaMax > 0 {
			s.Was = fmt.Sprint(a.ArenaMax)
		}
		out = append(out, s)
	}
	return out
}

func mibArg(b int64) string {
	if b%(1<<30) == 0 {
		return fmt.Sprintf("%dg", b>>30)
	}
	return fmt.Sprintf("%dm", (b+(1<<19))>>20)
}

// confidence: high from a week of data, medium from a day, low below;
// an OOM kill or a restart lowers it one level (the peak may have been
// cut, or a restart's fresh state not seen).
func confidence(span time.Duration, c *Container) (string, string) {
	levels := []string{"low", "medium", "high"}
	l := 0
	switch {
	case span >= 7*24*time.Hour:
		l = 2
	case span >= 24*time.Hour:
		l = 1
	}
	why := "range " + format.Span(span)
	if c.OOMKills > 0 || c.Restarts > 0 {
		l = max(l-1, 0)
	}
	switch {
	case c.OOMKills < 0:
		why += ", OOM kills not read"
	default:
		why += ", " + format.Count(c.OOMKills, "OOM kill", "OOM kills")
	}
	switch {
	case c.Restarts < 0:
		why += ", restarts not read"
	default:
		why += ", " + format.Count(c.Restarts, "restart", "restarts")
	}
	return levels[l], why
}

// common is the common rule's limit (the highest working set × 1.15)
// judged by the data: below the unreclaimable peak (or a fixed-heap
// JVM's need) it would have OOM-killed the container; far above the
// need it wastes memory.
func common(maxWS, maxU, cache, runtimeNeed int64, j *jvm) Common {
	krr := roundMiB(int64(float64(maxWS) * KRRHeadroom))
	c := Common{LimitBytes: krr}
	need := maxU + cache
	switch {
	case maxU > krr:
		c.Verdict = VerdictOOM
		c.Why = fmt.Sprintf("would have OOM-killed it: %s that reclaim cannot free was seen, above %s", format.Bytes(maxU), format.Bytes(krr))
	case j != nil && runtimeNeed > krr:
		c.Verdict = VerdictOOM
		c.Why = fmt.Sprintf("would OOM-kill it once the JVM's heap fills: the heap maximum %s and %s besides are above %s (the range's working set saw only the heap touched so far)",
			format.Bytes(j.heap), format.Bytes(j.nonHeap), format.Bytes(krr))
	case float64(krr) > WasteFactor*float64(max(need, runtimeNeed)) && krr-max(need, runtimeNeed) >= WasteMinBytes:
		c.Verdict = VerdictWaste
		c.Why = fmt.Sprintf("wastes %s: the working set counts %s of page cache reclaim takes back, while the container needs %s (unreclaimable peak + page cache need)",
			format.Bytes(krr-max(need, runtimeNeed)), format.Bytes(max(maxWS-maxU, 0)), format.Bytes(max(need, runtimeNeed)))
	default:
		c.Verdict = VerdictFits
		c.Why = fmt.Sprintf("holds the unreclaimable peak %s without much to spare or waste", format.Bytes(maxU))
	}
	return c
}
