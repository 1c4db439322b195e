package model

import (
	"sort"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Analyze builds the host model from one snapshot.
func Analyze(s *sample.Snapshot, source string) *Host {
	h := &Host{S: s}
	h.Info = hostInfo(s, source)
	h.Accounting = accounting(s)
	h.Zones, h.Watermarks = zones(s, h.Info.PageSize)
	h.Cgroups = cgroups(s)
	h.Slab = slab(s)
	h.Processes = processes(s)
	h.Reclaim = reclaim(s, h.Info.UptimeSeconds)
	h.Runtimes = RuntimesOf(s)
	attachSlack(h)
	attachCgroupLimits(h)
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

func hostInfo(s *sample.Snapshot, source string) HostInfo {
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

func reclaim(s *sample.Snapshot, uptime float64) Reclaim {
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
	if v, ok := s.Get("node_pressure_memory_waiting_seconds_total"); ok {
		r.PSISomeTotalSeconds = &v
	}
	if v, ok := s.Get("node_pressure_memory_stalled_seconds_total"); ok {
		r.PSIFullTotalSeconds = &v
	}
	if uptime > 0 {
		setRates(&r, uptime, map[string]float64{
			"kswapd_low_wmark_hit_quickly": r.KswapdLowWmarkHitQuickly,
			"allocstall":                   r.Allocstall,
			"pgscan_direct":                r.PgscanDirect,
			"compact_stall":                r.CompactStall,
		})
	}
	return r
}

// setRates sets r's daily rates from counts over seconds.
func setRates(r *Reclaim, seconds float64, counts map[string]float64) {
	r.Seconds, r.Counts = seconds, counts
	r.PerDay = map[string]float64{}
	for k, v := range counts {
		r.PerDay[k] = v / (seconds / 86400)
	}
}

func processes(s *sample.Snapshot) []Process {
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
		{"memdoctor_process_malloc_arena_max", func(p *Process, v float64) { p.ArenaMax = ptr(v) }},
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
	for _, m := range s.Select("memdoctor_malloc_setting") {
		ms := mallocOf(get(m))
		if ms.Settings == nil {
			ms.Settings = map[string]float64{}
		}
		ms.Settings[m.Labels.Get("setting")] = m.Value
	}
	for _, m := range s.Select("memdoctor_process_allocator_info") {
		p := get(m)
		p.Allocator, p.AllocatorObject = m.Labels.Get("allocator"), m.Labels.Get("object")
	}
	out := make([]Process, 0, len(order))
	for _, pid := range order {
		out = append(out, *byPID[pid])
	}
	sort.SliceStable(out, func(i, j int) bool { return RankOf(out[i]) > RankOf(out[j]) })
	return out
}

func mallocOf(p *Process) *MallocState {
	if p.Malloc == nil {
		p.Malloc = &MallocState{}
	}
	return p.Malloc
}

// RankOf is what processes are ranked by: PSS when read, else RSS.
func RankOf(p Process) int64 {
	if p.PSSBytes != nil {
		return *p.PSSBytes
	}
	return p.RSSBytes
}

func users(s *sample.Snapshot) []UserTotal {
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
