package sample

import "strings"

// Description is the help text and kind of a series, for exposition.
type Description struct {
	Help string
	Kind Kind
}

// catalog maps name prefixes to descriptions, longest prefix first wins.
// node_exporter's own conventions are kept: vmstat counters are untyped
// (they are not all counters), meminfo values are gauges.
var catalog = []struct {
	prefix string
	d      Description
}{
	{"node_memory_", Description{"Memory information field from /proc/meminfo.", Gauge}},
	{"node_vmstat_", Description{"/proc/vmstat information field.", Untyped}},
	{"node_zoneinfo_protection_", Description{"Protection array (lowmem_reserve) of the zone, pages.", Gauge}},
	{"node_zoneinfo_", Description{"Zone information from /proc/zoneinfo, pages.", Gauge}},
	{"node_slabinfo_", Description{"Slab cache information from /proc/slabinfo.", Gauge}},
	{"node_cgroups_cgroups", Description{"Current cgroup number of the subsystem (dying ones included on v1).", Gauge}},
	{"node_cgroups_enabled", Description{"Whether the cgroup subsystem is enabled.", Gauge}},
	{"node_cpu_seconds_total", Description{"Seconds the CPUs spent in each mode.", Counter}},
	{"node_context_switches_total", Description{"Total number of context switches.", Counter}},
	{"node_intr_total", Description{"Total number of interrupts serviced.", Counter}},
	{"node_forks_total", Description{"Total number of forks.", Counter}},
	{"node_boot_time_seconds", Description{"Node boot time, in unixtime.", Gauge}},
	{"node_procs_running", Description{"Number of processes in runnable state.", Gauge}},
	{"node_procs_blocked", Description{"Number of processes blocked waiting for I/O to complete.", Gauge}},
	{"node_pressure_memory_waiting_seconds_total", Description{"Total time in seconds that processes have waited for memory.", Counter}},
	{"node_pressure_memory_stalled_seconds_total", Description{"Total time in seconds no process could make progress due to memory congestion.", Counter}},
	{"node_sysctl_", Description{"sysctl value from /proc/sys.", Gauge}},
	{"node_uname_info", Description{"Labeled system information as provided by the uname system call.", Gauge}},
	{"memdoctor_zoneinfo_", Description{"Zone information node_exporter does not export, pages.", Gauge}},
	{"memdoctor_softirqs_total", Description{"Total number of softirqs.", Counter}},
	{"memdoctor_pressure_memory_avg_ratio", Description{"Memory pressure (PSI) averages as a ratio.", Gauge}},
	{"memdoctor_page_size_bytes", Description{"Page size of the host.", Gauge}},
	{"memdoctor_glibc_info", Description{"glibc release of the host.", Gauge}},
	{"memdoctor_slabinfo_size_bytes", Description{"Memory held by the slab cache's slabs.", Gauge}},
	{"memdoctor_allocinfo_bytes", Description{"Live bytes the kernel allocated at a call site (/proc/allocinfo, 6.10+ with allocation profiling; the 40 largest sites).", Gauge}},
	{"memdoctor_allocinfo_calls", Description{"Live allocations the kernel made at a call site (/proc/allocinfo; the 40 largest sites by bytes).", Gauge}},
	{"memdoctor_allocinfo_total_bytes", Description{"Live bytes of every call site of /proc/allocinfo.", Gauge}},
	{"memdoctor_slabinfo_reclaimable", Description{"1 when the slab cache is reclaimable (SLAB_RECLAIM_ACCOUNT).", Gauge}},
	{"memdoctor_cgroup_info", Description{"cgroup layout of the host.", Gauge}},
	{"memdoctor_cgroup2_", Description{"Unified cgroup root statistics (cgroup.stat).", Gauge}},
	{"memdoctor_memcg_live_cgroups", Description{"Live memory cgroups.", Gauge}},
	{"memdoctor_memcg_dying_cgroups", Description{"Removed memory cgroups still allocated (dying).", Gauge}},
	{"memdoctor_cgroup_dying_descendants", Description{"A v2 cgroup's removed descendants still allocated (its cgroup.stat nr_dying_descendants), for a cgroup with some and no processes of its own.", Gauge}},
	{"memdoctor_cgroup_memory_dying_charge_bytes", Description{"Charge a v2 cgroup without processes of its own holds beyond its live children's usage: left by its dying descendants or reparented to it.", Gauge}},
	{"memdoctor_memcg_charged_bytes", Description{"Pages charged to memory cgroups by kind, from the page scan (check --scan-pages).", Gauge}},
	{"memdoctor_memcg_dying_pinned_bytes", Description{"Pages removed memory cgroups still hold, by kind, from the page scan.", Gauge}},
	{"memdoctor_memcg_dying_pinned_ancestor_bytes", Description{"Page cache of removed memory cgroups, by their nearest live ancestor.", Gauge}},
	{"memdoctor_cgroup_trace_", Description{"The cgroup mkdir/rmdir trace (check --trace, record --trace): its length and counts over it (in a recording, over the interval).", Gauge}},
	{"memdoctor_cgroup_trace_dying", Description{"Memory cgroups removed since the trace began and still allocated (BPF follows each to its release).", Gauge}},
	{"memdoctor_cgroup_trace_dying_untracked", Description{"Memory cgroups removed during the trace that the tracer had no room to follow (the dying count is a lower bound).", Gauge}},
	{"memdoctor_cgroup_trace_dying_oldest_seconds", Description{"Time since the oldest memory cgroup removed during the trace and still allocated was removed.", Gauge}},
	{"memdoctor_cgroup_trace_dying_age_seconds", Description{"Time since a dying memory cgroup (one of the oldest removed during the trace) was removed.", Gauge}},
	{"memdoctor_cgroup_trace_ops", Description{"Memory cgroups created (op=mkdir) or removed (op=rmdir) by a process name during the trace.", Gauge}},
	{"memdoctor_reclaim_trace_", Description{"The reclaim trace (check --trace, record --trace): reclaim stalls by kind, process name and memory cgroup, and kswapd wake-ups, over the trace.", Gauge}},
	{"memdoctor_pagescan_", Description{"The page scan of /proc/kpagecgroup and /proc/kpageflags itself.", Gauge}},
	{"memdoctor_cgroup_memory_events_total", Description{"Memory cgroup events (v2 memory.events; v1 failcnt as max, oom_control's oom_kill).", Counter}},
	{"memdoctor_cgroup_memory_events_local_total", Description{"cgroup v2 memory.events.local counters (this cgroup only).", Counter}},
	{"memdoctor_cgroup_memory_pressure_seconds_total", Description{"Memory stall time of the cgroup (v2 memory.pressure).", Counter}},
	{"memdoctor_cgroup_memory_pressure_avg10_percent", Description{"Share of the last 10 s the cgroup's tasks stalled on memory (v2 memory.pressure).", Gauge}},
	{"memdoctor_cgroup_memory_pressure_avg60_percent", Description{"Share of the last 60 s the cgroup's tasks stalled on memory (v2 memory.pressure).", Gauge}},
	{"memdoctor_cgroup_memory_stat", Description{"memory.stat keys of the cgroup, in v2 names.", Gauge}},
	{"memdoctor_cgroup_memory_unreclaimable_bytes", Description{"What the cgroup's reclaim cannot take back without swap: anon, shmem and unreclaimable kernel memory (record).", Gauge}},
	{"memdoctor_cgroup_memory_oom_distance_bytes", Description{"The cgroup's memory.max (v1 memory.limit_in_bytes) less its unreclaimable memory, plus the swap it may still take: room before the OOM killer acts (record; only with a limit).", Gauge}},
	{"memdoctor_cgroup_memory_oom_eta_seconds", Description{"Seconds until the cgroup's unreclaimable memory uses its distance to the limit at its growth over the recorder's last samples (record; only while it grows).", Gauge}},
	{"memdoctor_cgroup_owner_info", Description{"Who a memory cgroup belongs to (systemd unit, container, Kubernetes pod), from its path; namespace, pod and container names from the runtimes' state on the host where readable.", Gauge}},
	{"memdoctor_cgroup_memory_", Description{"Memory charged to the cgroup.", Gauge}},
	{"memdoctor_processes_vanished", Description{"Processes that exited while being read.", Gauge}},
	{"memdoctor_processes", Description{"Processes with user memory.", Gauge}},
	{"memdoctor_processes_focused", Description{"Processes selected by check's --pid, --cgroup and --user.", Gauge}},
	{"memdoctor_user_", Description{"Per-user totals over the user's processes (check --users).", Gauge}},
	{"memdoctor_smaps_rollup_reads", Description{"smaps_rollup reads in the last collection.", Gauge}},
	{"memdoctor_smaps_rollup_seconds", Description{"Time spent reading smaps_rollup in the last collection.", Gauge}},
	{"memdoctor_process_allocator_info", Description{"The allocator that serves the process' malloc (label allocator: glibc, jemalloc, tcmalloc, mimalloc, musl, other; object: the object defining it; value 1).", Gauge}},
	{"memdoctor_process_cgroup_info", Description{"The memory cgroup a reported process runs in (label cgroup; value 1), on the live host.", Gauge}},
	{"memdoctor_process_", Description{"Per-process memory of the largest processes.", Gauge}},
	{"memdoctor_malloc_", Description{"The allocator's view of a process (glibc: mallinfo2, malloc_info; jemalloc: mallctl; tcmalloc: MallocExtension).", Gauge}},
	{"memdoctor_malloc_setting", Description{"A setting of jemalloc or tcmalloc that decides whether it gives freed memory back by itself (label setting: background_thread 0 or 1, dirty_decay_ms, muzzy_decay_ms, release_rate), read in the process by check --malloc.", Gauge}},
	{"memdoctor_runtime_", Description{"A language runtime's garbage collector, normalised across runtimes.", Gauge}},
	{"memdoctor_runtime_info", Description{"Language runtime seen on the host (value 1).", Gauge}},
	{"memdoctor_runtime_gc_", Description{"Garbage collections of a language runtime, cumulative.", Counter}},
	{"memdoctor_runtime_gc_pending_", Description{"Memory a language runtime allocated since its last major collection and has not freed, and the amount that starts the next one.", Gauge}},
	{"memdoctor_runtime_gc_last_cause_info", Description{"Cause of the JVM's latest collection (value 1).", Gauge}},
	{"memdoctor_runtime_process_info", Description{"What a .NET runtime says of its process (ProcessInfo): OS, architecture, instance cookie, command line with its secrets masked (value 1).", Gauge}},
	{"memdoctor_runtime_gc_settings_info", Description{"Garbage collector settings of a .NET process in force, one label each (value 1).", Gauge}},
	{"process_cpu_seconds_total", Description{"Total user and system CPU time spent by the recorder in seconds.", Counter}},
	{"process_resident_memory_bytes", Description{"Resident memory size of the recorder in bytes.", Gauge}},
	{"memdoctor_record_collect_seconds", Description{"Wall time of the recorder's last collection.", Gauge}},
	{"memdoctor_record_collect_cpu_seconds", Description{"CPU time of the recorder's last collection.", Gauge}},
	{"memdoctor_record_pending_scrapes", Description{"Scrapes kept in memory because storing failed.", Gauge}},
	{"memdoctor_record_scrapes_stored_total", Description{"Scrapes the recorder stored.", Counter}},
	{"memdoctor_record_append_errors_total", Description{"Failed attempts to store scrapes.", Counter}},
	{"memdoctor_record_dropped_total", Description{"Samples dropped because the clock went back behind the store.", Counter}},
	{"memdoctor_record_collections_total", Description{"Collections the recorder made.", Counter}},
	{"memdoctor_record_pending_bytes", Description{"Estimated memory of the scrapes kept because storing failed.", Gauge}},
	{"memdoctor_record_pending_dropped_total", Description{"Scrapes dropped because storing failed longer than the memory bound holds.", Counter}},
	{"memdoctor_record_http_connections", Description{"HTTP connections open to the recorder.", Gauge}},
	{"memdoctor_record_http_connections_limit", Description{"HTTP connections the recorder holds at most.", Gauge}},
	{"memdoctor_record_http_connections_closed_total", Description{"HTTP connections closed by the recorder to stay within its limit (evicted: waited longest without a request; refused: all busy).", Counter}},
	{"memdoctor_record_page_renders_total", Description{"Renderings of the live report page the recorder serves at /.", Counter}},
	{"memdoctor_finding", Description{"A current finding of memdoctor's diagnosis of the recording (value 1).", Gauge}},
	{"memdoctor_finding_evidence", Description{"A number proving a current finding (name, in unit).", Gauge}},
	{"memdoctor_findings_evaluated_timestamp_seconds", Description{"When the served findings were evaluated, in unixtime.", Gauge}},
	{"memdoctor_findings_evaluation_seconds", Description{"Wall time of the last evaluation of the findings.", Gauge}},
	{"memdoctor_findings_evaluation_success", Description{"Whether the last evaluation of the findings succeeded.", Gauge}},
	{"memdoctor_collector_duration_seconds", Description{"Duration of the collector's last run.", Gauge}},
	{"memdoctor_collector_success", Description{"Whether the collector's last run succeeded.", Gauge}},
}

// Describe returns the help text and kind of a series name. Unknown names
// are untyped, with a generic help text.
func Describe(name string) Description {
	best := -1
	for i, c := range catalog {
		if strings.HasPrefix(name, c.prefix) && (best < 0 || len(c.prefix) > len(catalog[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		if strings.HasSuffix(name, "_total") {
			return Description{"memdoctor series " + name + ".", Counter}
		}
		return Description{"memdoctor series " + name + ".", Untyped}
	}
	return catalog[best].d
}
