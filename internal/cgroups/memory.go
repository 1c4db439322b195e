// Package cgroups reads one memory cgroup's own accounting (cgroup v2 and
// v1), picks which cgroups of a hierarchy are worth reading in full, and
// names a cgroup path as its users know it (systemd unit, Docker, containerd
// or CRI-O container, Kubernetes pod and QoS class).
//
// Files per cgroup (mm/memcontrol.c, mm/memcontrol-v1.c):
//
//	v2: memory.current, memory.max, memory.high, memory.low, memory.min,
//	    memory.peak (5.19+), memory.swap.current, memory.swap.max,
//	    memory.stat (this cgroup and its descendants), memory.events
//	    (hierarchical), memory.events.local, memory.pressure (PSI)
//	v1: memory.usage_in_bytes, memory.limit_in_bytes,
//	    memory.soft_limit_in_bytes, memory.max_usage_in_bytes,
//	    memory.memsw.usage_in_bytes, memory.memsw.limit_in_bytes,
//	    memory.failcnt, memory.oom_control (oom_kill, 4.13+), memory.stat
//	    (local keys and hierarchical total_* keys)
//
// Both are read into one shape whose names are v2's: on v1 the stat keys
// are the total_* ones without the prefix (usage_in_bytes is hierarchical,
// so its parts must be too), rss is anon and cache is file; memory.failcnt
// is the "max" event (usage hit the limit) and oom_control's oom_kill the
// "oom_kill" event; unlike v2's, both count only where the limit was hit,
// not in the ancestors. Files go through procfs (bounded reads of regular
// files) and the fuzzed parsers there; on the live host each cgroup's
// directory is opened once and its files are read relative to it (openat,
// one read, close: no path walk per file).
package cgroups

import (
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Unlimited is a limit that is not set ("max" on v2, the page counter's
// maximum on v1).
const Unlimited int64 = -1

// v1Unlimited: v1 prints "no limit" as PAGE_COUNTER_MAX × page size, about
// 2^63; any value from 2^62 up is no limit in practice.
const v1Unlimited = int64(1) << 62

// Memory is one cgroup's memory accounting. A limit is Unlimited when not
// set; Has says which files were read.
type Memory struct {
	// Path is relative to the hierarchy's root, "/" for the root.
	Path string
	V1   bool
	// Usage is memory.current (v2) or memory.usage_in_bytes (v1), bytes.
	Usage int64
	// Max is memory.max or memory.limit_in_bytes; High, Low and Min are
	// v2's (v1's soft limit is read as Low).
	Max, High, Low, Min int64
	// Peak is memory.peak (v2, 5.19+) or memory.max_usage_in_bytes (v1).
	Peak int64
	// SwapUsage and SwapMax: v2 memory.swap.current/.max; v1 memsw
	// (memory+swap) minus usage.
	SwapUsage, SwapMax int64
	// Stat is memory.stat in v2 names (see the package comment).
	Stat map[string]int64
	// Events are memory.events (v2: this cgroup and its descendants; v1:
	// failcnt as "max", oom_control's oom_kill and under_oom, this cgroup's
	// own); EventsLocal is v2's memory.events.local.
	Events, EventsLocal map[string]int64
	// Pressure is memory.pressure (v2 with PSI).
	Pressure procfs.PSI
	// Has holds the names of the files read: "usage", "max", "high",
	// "low", "min", "peak", "swap", "stat", "events", "events.local",
	// "pressure".
	Has map[string]bool
}

// WorkingSet is usage minus inactive file pages, floored at 0: what the
// kubelet and cadvisor call the working set and evict on, the part reclaim
// cannot take back cheaply.
func (m *Memory) WorkingSet() int64 {
	return max(m.Usage-m.Stat["inactive_file"], 0)
}

// Limit is the limit the working set is judged against: memory.max, or
// memory.high when it is lower (reclaim and throttling start there).
func (m *Memory) Limit() int64 {
	l := m.Max
	if m.High != Unlimited && (l == Unlimited || m.High < l) {
		l = m.High
	}
	return l
}

// Reader reads cgroups below one hierarchy's mount point.
type Reader struct {
	FS procfs.FS
	// Root is the FS-relative mount point of the hierarchy holding the
	// memory controller ("sys/fs/cgroup" or "sys/fs/cgroup/memory").
	Root string
	V1   bool
	// Failcnt makes Brief read v1's memory.failcnt as MaxEvents too (one
	// more file per cgroup: only a selection that compares samples needs
	// it; v2 has the count in memory.events, read anyway).
	Failcnt bool
}

func (r Reader) file(cg, name string) string {
	return r.dirName(cg) + "/" + name
}

func (r Reader) dirName(cg string) string {
	if cg == "/" {
		return r.Root
	}
	return r.Root + cg
}

// files reads one cgroup's files through its open directory (one path
// walk for the cgroup, none per file).
type files struct {
	r  Reader
	cg string
	d  procfs.Dir
}

// open opens a cgroup's directory; ok is false when it is gone.
func (r Reader) open(cg string) (files, bool) {
	d, err := r.FS.OpenDir(r.dirName(cg))
	if err != nil {
		return files{}, false
	}
	return files{r, cg, d}, true
}

func (f files) close() { _ = f.d.Close() } // read-only

func (f files) int(name string) (int64, bool) {
	data, err := f.d.ReadSmall(name)
	if err != nil {
		return 0, false
	}
	v, err := procfs.ParseCgroupInt(data, f.r.file(f.cg, name))
	if err != nil {
		return 0, false
	}
	if f.r.V1 && v >= v1Unlimited {
		v = Unlimited
	}
	return v, true
}

func (f files) kv(name string) (procfs.KV, bool) {
	data, err := f.d.ReadSmall(name)
	if err != nil {
		return procfs.KV{}, false
	}
	kv, err := procfs.ParseKV(data, f.r.file(f.cg, name))
	return kv, err == nil
}

func (f files) usage() (int64, bool) {
	if f.r.V1 {
		return f.int("memory.usage_in_bytes")
	}
	return f.int("memory.current")
}

// Usage reads only the usage file: the cheap pass over every cgroup.
func (r Reader) Usage(cg string) (int64, bool) {
	f, ok := r.open(cg)
	if !ok {
		return 0, false
	}
	defer f.close()
	return f.usage()
}

// Brief is what the selection needs of every cgroup: usage, the limit, and
// the event counters since the cgroup was made.
type Brief struct {
	Path     string
	Usage    int64
	Limit    int64 // Unlimited when none
	OOMKills int64
	// HighEvents is v2's memory.events "high": how often usage went over
	// memory.high (the cgroup was reclaimed and throttled); 0 on v1.
	HighEvents int64
	// OOMs is v2's memory.events "oom": how often the OOM killer was
	// invoked for the cgroup (a kill may not follow); 0 on v1.
	OOMs int64
	// MaxEvents is v2's memory.events "max" (usage hit memory.max), or
	// v1's memory.failcnt when the Reader's Failcnt is set, else 0.
	MaxEvents int64
	// read keeps what the files read for the Brief said, so that
	// ReadBrief does not read them a second time (nil: read them).
	read *briefFiles
}

// briefFiles are the files a Brief read: the limit (and v2's memory.high)
// as read, the events file's counters and v1's failcnt; a nil map or a
// false ok is a file that could not be read.
type briefFiles struct {
	limit, high, failcnt       int64
	limitOK, highOK, failcntOK bool
	events                     map[string]int64
}

// Brief reads the three files the selection needs; ok is false when the
// cgroup has no usage file (removed while walking, or no memory controller).
func (r Reader) Brief(cg string) (b Brief, ok bool) {
	f, ok := r.open(cg)
	if !ok {
		return Brief{Path: cg, Limit: Unlimited}, false
	}
	defer f.close()
	return f.brief()
}

func (f files) brief() (b Brief, ok bool) {
	b = Brief{Path: f.cg, Limit: Unlimited}
	if b.Usage, ok = f.usage(); !ok {
		return b, false
	}
	rd := &briefFiles{}
	b.read = rd
	limit, events := "memory.max", "memory.events"
	if f.r.V1 {
		limit, events = "memory.limit_in_bytes", "memory.oom_control"
	}
	if rd.limit, rd.limitOK = f.int(limit); rd.limitOK {
		b.Limit = rd.limit
	}
	if !f.r.V1 {
		if rd.high, rd.highOK = f.int("memory.high"); rd.highOK && rd.high != Unlimited && (b.Limit == Unlimited || rd.high < b.Limit) {
			b.Limit = rd.high
		}
	}
	if kv, ok := f.kv(events); ok {
		rd.events = kv.Num
		if rd.events == nil {
			rd.events = map[string]int64{}
		}
		b.OOMKills = kv.Value("oom_kill")
		b.HighEvents = kv.Value("high")
		if !f.r.V1 { // oom_control has neither
			b.OOMs = kv.Value("oom")
			b.MaxEvents = kv.Value("max")
		}
	}
	if f.r.V1 && f.r.Failcnt {
		if rd.failcnt, rd.failcntOK = f.int("memory.failcnt"); rd.failcntOK {
			b.MaxEvents = rd.failcnt
		}
	}
	return b, true
}

// Read reads every memory file of one cgroup. A missing file leaves its
// field unset (Has says); ok is false when the usage file itself is gone.
func (r Reader) Read(cg string) (m Memory, ok bool) {
	f, ok := r.open(cg)
	if !ok {
		return Memory{Path: cg}, false
	}
	defer f.close()
	u, ok := f.usage()
	if !ok {
		return Memory{Path: cg}, false
	}
	return f.read(Brief{Path: cg, Usage: u}), true
}

// ReadBrief reads the rest of a cgroup's files after its Brief, keeping the
// Brief's usage (one reading of usage per collection: its parts and limit
// are judged against the same number).
func (r Reader) ReadBrief(b Brief) Memory {
	f, ok := r.open(b.Path)
	if !ok {
		return Memory{Path: b.Path, V1: r.V1, Max: Unlimited, High: Unlimited, SwapMax: Unlimited, Usage: b.Usage,
			Stat: map[string]int64{}, Events: map[string]int64{}, Has: map[string]bool{"usage": true}}
	}
	defer f.close()
	return f.read(b)
}

func (f files) read(b Brief) Memory {
	cg := b.Path
	m := Memory{Path: cg, V1: f.r.V1, Max: Unlimited, High: Unlimited, Low: 0, Min: 0, Peak: 0,
		SwapMax: Unlimited, Stat: map[string]int64{}, Events: map[string]int64{}, Has: map[string]bool{"usage": true},
		Usage: b.Usage}
	rd := b.read
	set := func(dst *int64, key, file string) {
		v, ok := int64(0), false
		switch {
		case rd != nil && (file == "memory.limit_in_bytes" || file == "memory.max"):
			v, ok = rd.limit, rd.limitOK
		case rd != nil && file == "memory.high":
			v, ok = rd.high, rd.highOK
		default:
			v, ok = f.int(file)
		}
		if ok {
			*dst = v
			m.Has[key] = true
		}
	}
	// events reads the events file (v1: oom_control) unless the Brief did.
	events := func(name string) (map[string]int64, bool) {
		if rd != nil {
			return rd.events, rd.events != nil
		}
		kv, ok := f.kv(name)
		return kv.Num, ok
	}
	kv := f.kv
	if f.r.V1 {
		set(&m.Max, "max", "memory.limit_in_bytes")
		set(&m.Low, "low", "memory.soft_limit_in_bytes")
		if m.Low == Unlimited {
			m.Low = 0
		}
		set(&m.Peak, "peak", "memory.max_usage_in_bytes")
		var memsw, memswMax int64
		if v, ok := f.int("memory.memsw.usage_in_bytes"); ok {
			memsw = v
			m.SwapUsage = max(memsw-m.Usage, 0)
			m.Has["swap"] = true
			if l, ok := f.int("memory.memsw.limit_in_bytes"); ok && l != Unlimited {
				memswMax = l
				if m.Max != Unlimited {
					m.SwapMax = max(memswMax-m.Max, 0)
				}
			}
		}
		if st, ok := kv("memory.stat"); ok {
			m.Has["stat"] = true
			m.Stat = v1Stat(st)
		}
		v, ok := int64(0), false
		if rd != nil && f.r.Failcnt {
			v, ok = rd.failcnt, rd.failcntOK
		} else {
			v, ok = f.int("memory.failcnt")
		}
		if ok {
			m.Events["max"] = v
			m.Has["events"] = true
		}
		if oc, ok := events("memory.oom_control"); ok {
			m.Has["events"] = true
			for _, k := range []string{"oom_kill", "under_oom"} {
				if v, ok := oc[k]; ok {
					m.Events[k] = v
				}
			}
		}
		return m
	}
	set(&m.Max, "max", "memory.max")
	set(&m.High, "high", "memory.high")
	set(&m.Low, "low", "memory.low")
	set(&m.Min, "min", "memory.min")
	set(&m.Peak, "peak", "memory.peak")
	if v, ok := f.int("memory.swap.current"); ok {
		m.SwapUsage = v
		m.Has["swap"] = true
		set(&m.SwapMax, "swap", "memory.swap.max")
	}
	if st, ok := kv("memory.stat"); ok {
		m.Has["stat"] = true
		for k, v := range st.Num {
			m.Stat[k] = v
		}
	}
	if ev, ok := events("memory.events"); ok {
		m.Has["events"] = true
		for k, v := range ev {
			m.Events[k] = v
		}
	}
	if ev, ok := kv("memory.events.local"); ok {
		m.Has["events.local"] = true
		m.EventsLocal = make(map[string]int64, len(ev.Num))
		for k, v := range ev.Num {
			m.EventsLocal[k] = v
		}
	}
	if data, err := f.d.ReadSmall("memory.pressure"); err == nil {
		if p, err := procfs.ParsePSI(data, f.r.file(cg, "memory.pressure")); err == nil {
			m.Pressure = p
			m.Has["pressure"] = true
		}
	}
	return m
}

// v1Stat turns v1's memory.stat into v2 names: the hierarchical total_*
// keys (usage_in_bytes counts descendants, so its parts must), rss as
// anon, cache as file, mapped_file as file_mapped, dirty as file_dirty,
// writeback as file_writeback. A kernel without total_* keys (no
// hierarchy) gives its local keys.
func v1Stat(st procfs.KV) map[string]int64 {
	out := make(map[string]int64, len(st.Num))
	hasTotal := false
	for k := range st.Num {
		if strings.HasPrefix(k, "total_") {
			hasTotal = true
			break
		}
	}
	for k, v := range st.Num {
		if hasTotal {
			var ok bool
			if k, ok = strings.CutPrefix(k, "total_"); !ok {
				continue
			}
		}
		switch k {
		case "rss":
			k = "anon"
		case "cache":
			k = "file"
		case "mapped_file":
			k = "file_mapped"
		case "dirty":
			k = "file_dirty"
		case "writeback":
			k = "file_writeback"
		case "rss_huge":
			k = "anon_thp"
		}
		out[k] = v
	}
	return out
}
