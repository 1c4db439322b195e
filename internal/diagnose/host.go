package diagnose

import (
	"sort"
	"strconv"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Host is the model of one host at one instant, derived from samples only.
type Host struct {
	S *sample.Scrape `json:"-"`

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
	// Preload is set when the process maps memdoctor's preload library.
	Preload bool `json:"preload,omitempty"`
	// Malloc is the allocator's own view, when it was read (memdoctor's
	// preload library, or check --malloc).
	Malloc *MallocState `json:"malloc,omitempty"`
}

// MallocState is a glibc process' heap as its allocator sees it.
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
	// (nil when it is unknown): since boot for one scrape; over the newest
	// boot, since the last change of watermark_scale_factor, for a time
	// range (the span watermark_thrash judges, so both rules show the same
	// rates). Counts are those increases.
	PerDay  map[string]float64 `json:"per_day,omitempty"`
	Counts  map[string]float64 `json:"counts,omitempty"`
	Seconds float64            `json:"span_seconds,omitempty"`
	// PSI memory "some" average over 60 s, percent (-1 when unavailable).
	PSISomeAvg60 float64 `json:"psi_some_avg60_percent"`
	PSIFullAvg60 float64 `json:"psi_full_avg60_percent"`
}

// Analyze builds the host model from one scrape.
func Analyze(s *sample.Scrape, source string) *Host {
	h := &Host{S: s}
	h.Info = hostInfo(s, source)
	h.Accounting = accounting(s)
	h.Zones, h.Watermarks = zones(s, h.Info.PageSize)
	h.Cgroups = cgroups(s)
	h.Slab = slab(s)
	h.Processes = processes(s)
	h.Reclaim = reclaim(s, h.Info.UptimeSeconds)
	h.Runtimes = RuntimesOf(s)
	h.Users = users(s)
	if rec := RecommendScaleFactor(h); rec > 0 {
		h.Watermarks.Recommended = h.Watermarks.Evaluate(rec)
	}
	return h
}

// UnsetHostName is the kernel's nodename for a host never named.
const UnsetHostName = sample.UnsetHostName

// HostName is sample.HostName: "localhost" for a host never named.
func HostName(nodename string) string { return sample.HostName(nodename) }

func hostInfo(s *sample.Scrape, source string) HostInfo {
	hi := HostInfo{Time: s.Time, Source: source, PageSize: int(s.Value("memdoctor_page_size_bytes"))}
	if hi.PageSize == 0 {
		hi.PageSize = 4096
	}
	if u := s.Select("node_uname_info"); len(u) > 0 {
		hi.Hostname = HostName(u[0].Labels.Get("nodename"))
		hi.Kernel = u[0].Labels.Get("release")
		hi.Arch = u[0].Labels.Get("machine")
	}
	if g := s.Select("memdoctor_glibc_info"); len(g) > 0 {
		hi.Glibc = g[0].Labels.Get("version")
	}
	if bt, ok := s.Get("node_boot_time_seconds"); ok && bt > 0 && !s.Time.IsZero() {
		hi.UptimeSeconds = float64(s.Time.Unix()) - bt
	}
	cpus := map[string]bool{}
	for _, m := range s.Select("node_cpu_seconds_total") {
		cpus[m.Labels.Get("cpu")] = true
	}
	hi.CPUs = len(cpus)
	return hi
}

func reclaim(s *sample.Scrape, uptime float64) Reclaim {
	r := Reclaim{
		KswapdLowWmarkHitQuickly:  s.Value("node_vmstat_kswapd_low_wmark_hit_quickly"),
		KswapdHighWmarkHitQuickly: s.Value("node_vmstat_kswapd_high_wmark_hit_quickly"),
		PgscanDirect:              s.Value("node_vmstat_pgscan_direct"),
		PgscanKswapd:              s.Value("node_vmstat_pgscan_kswapd"),
		CompactStall:              s.Value("node_vmstat_compact_stall"),
		OOMKill:                   s.Value("node_vmstat_oom_kill"),
		PSISomeAvg60:              -1,
		PSIFullAvg60:              -1,
	}
	for _, z := range []string{"dma", "dma32", "normal", "movable", "device", "high"} {
		r.Allocstall += s.Value("node_vmstat_allocstall_" + z)
	}
	r.Allocstall += s.Value("node_vmstat_allocstall") // before 4.8
	if v, ok := s.Get("memdoctor_pressure_memory_avg_ratio", "kind", "some", "window", "60s"); ok {
		r.PSISomeAvg60 = v * 100
	}
	if v, ok := s.Get("memdoctor_pressure_memory_avg_ratio", "kind", "full", "window", "60s"); ok {
		r.PSIFullAvg60 = v * 100
	}
	if uptime > 0 {
		r.setRates(uptime, map[string]float64{
			"kswapd_low_wmark_hit_quickly": r.KswapdLowWmarkHitQuickly,
			"allocstall":                   r.Allocstall,
			"pgscan_direct":                r.PgscanDirect,
			"compact_stall":                r.CompactStall,
		})
	}
	return r
}

func (r *Reclaim) setRates(seconds float64, counts map[string]float64) {
	r.Seconds, r.Counts = seconds, counts
	r.PerDay = map[string]float64{}
	for k, v := range counts {
		r.PerDay[k] = v / (seconds / 86400)
	}
}

// Short reports whether the span is too short to extrapolate daily rates
// from (minEvidenceSeconds).
func (r *Reclaim) Short() bool { return r.Seconds < minEvidenceSeconds }

// Judged is the value of counter k compared with a per-day threshold: its
// daily rate over a span of at least minEvidenceSeconds; over a shorter
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

func processes(s *sample.Scrape) []Process {
	byPID := map[int]*Process{}
	var order []int
	get := func(m sample.Metric) *Process {
		pid, _ := strconv.Atoi(m.Labels.Get("pid"))
		p, ok := byPID[pid]
		if !ok {
			p = &Process{PID: pid, Comm: m.Labels.Get("comm")}
			byPID[pid] = p
			order = append(order, pid)
		}
		return p
	}
	ptr := func(v float64) *int64 { x := int64(v); return &x }
	for _, f := range []struct {
		name string
		set  func(*Process, float64)
	}{
		{"memdoctor_process_rss_bytes", func(p *Process, v float64) { p.RSSBytes = int64(v) }},
		{"memdoctor_process_pss_bytes", func(p *Process, v float64) { p.PSSBytes = ptr(v) }},
		{"memdoctor_process_uss_bytes", func(p *Process, v float64) { p.USSBytes = ptr(v) }},
		{"memdoctor_process_swap_bytes", func(p *Process, v float64) { p.SwapBytes = int64(v) }},
		{"memdoctor_process_anon_bytes", func(p *Process, v float64) { p.AnonBytes = int64(v) }},
		{"memdoctor_process_file_bytes", func(p *Process, v float64) { p.FileBytes = int64(v) }},
		{"memdoctor_process_shmem_bytes", func(p *Process, v float64) { p.ShmemBytes = int64(v) }},
		{"memdoctor_process_threads", func(p *Process, v float64) { p.Threads = int64(v) }},
		{"memdoctor_process_malloc_arenas", func(p *Process, v float64) { p.MallocArenas = ptr(v) }},
		{"memdoctor_process_preload", func(p *Process, v float64) { p.Preload = v > 0 }},
		{"memdoctor_malloc_system_bytes", func(p *Process, v float64) { mallocOf(p).SystemBytes = int64(v) }},
		{"memdoctor_malloc_in_use_bytes", func(p *Process, v float64) { mallocOf(p).InUseBytes = int64(v) }},
		{"memdoctor_malloc_free_bytes", func(p *Process, v float64) { mallocOf(p).FreeBytes = int64(v) }},
		{"memdoctor_malloc_retained_bytes", func(p *Process, v float64) { mallocOf(p).RetainedBytes = int64(v) }},
		{"memdoctor_malloc_arenas", func(p *Process, v float64) { mallocOf(p).Arenas = int64(v) }},
		{"memdoctor_malloc_trim_seconds", func(p *Process, v float64) { x := v; mallocOf(p).TrimSeconds = &x }},
	} {
		for _, m := range s.Select(f.name) {
			f.set(get(m), m.Value)
		}
	}
	out := make([]Process, 0, len(order))
	for _, pid := range order {
		out = append(out, *byPID[pid])
	}
	sort.SliceStable(out, func(i, j int) bool { return rankOf(out[i]) > rankOf(out[j]) })
	return out
}

func mallocOf(p *Process) *MallocState {
	if p.Malloc == nil {
		p.Malloc = &MallocState{}
	}
	return p.Malloc
}

func rankOf(p Process) int64 {
	if p.PSSBytes != nil {
		return *p.PSSBytes
	}
	return p.RSSBytes
}

func users(s *sample.Scrape) []UserTotal {
	by := map[string]*UserTotal{}
	var order []string
	for _, f := range []struct {
		name string
		set  func(*UserTotal, float64)
	}{
		{"memdoctor_user_processes", func(u *UserTotal, v float64) { u.Processes = int64(v) }},
		{"memdoctor_user_processes_unread", func(u *UserTotal, v float64) { u.Unread = int64(v) }},
		{"memdoctor_user_rss_bytes", func(u *UserTotal, v float64) { u.RSSBytes = int64(v) }},
		{"memdoctor_user_pss_bytes", func(u *UserTotal, v float64) { u.PSSBytes = int64(v) }},
		{"memdoctor_user_uss_bytes", func(u *UserTotal, v float64) { u.USSBytes = int64(v) }},
		{"memdoctor_user_swap_bytes", func(u *UserTotal, v float64) { u.SwapBytes = int64(v) }},
	} {
		for _, m := range s.Select(f.name) {
			k := m.Labels.Get("uid")
			u, ok := by[k]
			if !ok {
				uid, _ := strconv.Atoi(k)
				u = &UserTotal{UID: uid, User: m.Labels.Get("user")}
				by[k] = u
				order = append(order, k)
			}
			f.set(u, m.Value)
		}
	}
	out := make([]UserTotal, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PSSBytes > out[j].PSSBytes })
	return out
}
