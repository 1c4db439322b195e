// Package cgtrace traces who creates and removes cgroups: a bounded trace of
// the kernel's cgroup:cgroup_mkdir and cgroup:cgroup_rmdir tracepoints, with
// the calling process (comm, pid, parent) and its own cgroup or systemd unit,
// summed into rates per creator.
//
// It loads a small BPF program (CO-RE against the kernel's BTF, records
// through a ring buffer the reader drains on a timer, so most events cost no
// wakeup). Where BPF cannot load (no root, no BTF, lockdown) it reads the
// same tracepoints through tracefs, in a tracing instance of its own; where
// neither works it says why and the caller makes that a note.
package cgtrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Op is what happened to a cgroup.
type Op uint8

// The traced operations.
const (
	Mkdir Op = 1
	Rmdir Op = 2
	// DirectReclaim and MemcgReclaim are a task's stall in reclaim: the
	// host's (below the min watermark) or its memory cgroup's (at its
	// limit).
	DirectReclaim Op = 3
	MemcgReclaim  Op = 4
)

func (o Op) String() string {
	switch o {
	case Mkdir:
		return "mkdir"
	case Rmdir:
		return "rmdir"
	case DirectReclaim:
		return "direct"
	case MemcgReclaim:
		return "memcg"
	}
	return "unknown"
}

// Event is one cgroup created or removed.
type Event struct {
	Op        Op
	PID, PPID int
	Comm      string
	// Path is the cgroup's path inside its hierarchy.
	Path string
	// Hierarchy is the kernel's hierarchy id (0: the unified cgroup2 tree;
	// v1 hierarchies as in /proc/cgroups).
	Hierarchy int
	Level     int
	// CgroupID is the cgroup's kernfs id; MemcgID that of the calling
	// task's memory cgroup at the time of the event (BPF only; 0: not
	// known).
	CgroupID, MemcgID uint64
}

// Options bound a trace.
type Options struct {
	// Duration of the trace.
	Duration time.Duration
	// Hierarchy keeps only events of this hierarchy id (the memory
	// controller's); -1 keeps all.
	Hierarchy int
	// Method: "" tries BPF, then tracefs; "bpf" or "tracefs" only that.
	Method string
	// Poll is how often the kernel's buffer is drained (default
	// DefaultPoll with BPF, 100 ms with tracefs).
	Poll time.Duration
	// Tracefs is the tracefs mount (default /sys/kernel/tracing, then
	// /sys/kernel/debug/tracing).
	Tracefs string
	// Proc is the proc mount (default /proc).
	Proc string
	// KernelStats turns on the kernel's BPF run-time accounting for the
	// trace (it costs a clock read per program run) to report what the
	// program itself costs (BPF only).
	KernelStats bool
}

// Creator is one process name (and unit) that created or removed cgroups.
type Creator struct {
	Comm string `json:"comm"`
	// Unit is the creator's systemd unit, or its own cgroup path when it
	// runs in none.
	Unit string `json:"unit,omitempty"`
	// Parent is the comm of the first such process' parent.
	Parent string `json:"parent,omitempty"`
	// Cgroup is the memory cgroup the first such process ran in, read
	// when it made the cgroup (BPF), else from /proc when the trace read
	// the event.
	Cgroup  string `json:"cgroup,omitempty"`
	Mkdir   int64  `json:"mkdir"`
	Rmdir   int64  `json:"rmdir"`
	Example string `json:"example_path,omitempty"`
}

// Summary is a finished trace.
type Summary struct {
	// Method is "bpf" or "tracefs".
	Method  string
	Seconds float64
	// Events is every cgroup event seen; Kept those of the wanted
	// hierarchy; Dropped what the kernel side could not record.
	Events, Kept, Dropped int64
	// Creators, most operations first.
	Creators []Creator
	// Notes say why a method or a part was not used, in words for a
	// report.
	Notes []string
	// KernelRuns and KernelTime are the cgroup BPF programs' runs and run
	// time (mkdir, rmdir and release) in the summary's interval, with
	// Options.KernelStats.
	KernelRuns uint64
	KernelTime time.Duration
	// KernelPrograms are the same per program.
	KernelPrograms []ProgramStats
	// ReclaimTraced says reclaim was traced (BPF only); Stalls are the
	// tasks that reclaimed, by kind, name and memory cgroup, most time
	// first; KswapdWakes per NUMA node.
	ReclaimTraced bool
	Stalls        []Stall
	KswapdWakes   []NodeWakes
	// DyingTraced says removed memory cgroups were followed to their
	// release (BPF): Dying of those removed since the trace began are still
	// allocated, OldestDying are the oldest of them; DyingUntracked were
	// removed when the kernel side had no room to follow them.
	DyingTraced    bool
	Dying          int64
	DyingUntracked int64
	OldestDying    []DyingCgroup
}

// ProgramStats are one BPF program's runs and run time.
type ProgramStats struct {
	Name string
	Runs uint64
	Time time.Duration
}

// OldestDyingKept is how many of the oldest dying cgroups a summary names.
const OldestDyingKept = 5

// DyingCgroup is a memory cgroup removed during the trace and not freed.
type DyingCgroup struct {
	ID uint64 `json:"id"`
	// Path inside the hierarchy ("" when the trace did not see it made or
	// removed and its parent is gone too).
	Path string `json:"path,omitempty"`
	// Age is the time since it was removed.
	Age  time.Duration `json:"age_ns"`
	slot int           // where the kernel side keeps it (BPF)
}

// NodeWakes counts kswapd wake-ups on one node.
type NodeWakes struct {
	Node  int   `json:"node"`
	Wakes int64 `json:"wakes"`
}

// Stall is the time processes of one name and memory cgroup spent in one
// kind of reclaim.
type Stall struct {
	// Kind: "direct" (the host below its min watermark) or "memcg" (the
	// cgroup at its limit).
	Kind   string `json:"kind"`
	Comm   string `json:"comm"`
	Cgroup string `json:"cgroup"`
	Count  int64  `json:"count"`
	// Total, P99 and Max time in reclaim.
	Total time.Duration `json:"total_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
	// Reclaimed pages.
	Reclaimed int64 `json:"reclaimed_pages"`
}

// maxStallSamples bounds the durations kept per stall key for the p99,
// maxStallSamplesAll those of all keys (the p99 is then that of the first
// ones of the interval); maxKeys bounds the rows of stalls and of creators
// in an interval: past it, new names are summed in one row named Other.
const (
	maxStallSamples    = 1 << 16
	maxStallSamplesAll = 1 << 18
	maxKeys            = 1024
)

// Other names the row that sums the names past maxKeys, or past the top
// ones a summary exports.
const Other = "(other)"

type stallKey struct {
	op           Op
	comm, cgroup string
}

type stallAgg struct {
	Stall
	durs []time.Duration
}

// addStall counts one reclaim.
func (a *aggregator) addStall(op Op, pid int, comm string, memcgID uint64, d time.Duration, reclaimed int64) {
	p := a.procOf(pid, 0, memcgID)
	k := stallKey{op, comm, p.memcg}
	s := a.stalls[k]
	if s == nil {
		if len(a.stalls) >= maxKeys {
			k = stallKey{op, Other, ""}
		}
		if s = a.stalls[k]; s == nil {
			s = &stallAgg{Stall: Stall{Kind: op.String(), Comm: k.comm, Cgroup: k.cgroup}}
			a.stalls[k] = s
		}
	}
	s.Count++
	s.Total += d
	s.Max = max(s.Max, d)
	s.Reclaimed += reclaimed
	if len(s.durs) < maxStallSamples && a.durs < maxStallSamplesAll {
		s.durs = append(s.durs, d)
		a.durs++
	}
}

// p99 of the kept durations (nearest rank).
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*99+99)/100 - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ErrUnavailable says neither BPF nor tracefs could trace.
var ErrUnavailable = errors.New("cgroup tracing unavailable")

type creatorKey struct{ comm, unit string }

// aggregator sums events per creator.
type aggregator struct {
	opt      Options
	procFS   procfs.FS // opt.Proc, read through procfs
	events   int64
	kept     int64
	creators map[creatorKey]*Creator
	units    map[int]proc // so each process is read once
	fast     map[fastKey]*Creator
	// named are the creators the kernel side counts (BPF), by its key,
	// as the record of their first operation named them.
	named  map[cgtraceCreatorKey]Creator
	stalls map[stallKey]*stallAgg
	memcgs *memcgPaths
	durs   int // stall durations kept
	// memHier is the memory controller's hierarchy id (-1: unknown).
	memHier int
}

type proc struct {
	unit string
	// parentUnit is the parent's, read when the process' own is not.
	parentUnit string
	memcg      string // the memory cgroup's path
	ppid       int
}

func newAggregator(opt Options) *aggregator {
	return &aggregator{opt: opt, creators: map[creatorKey]*Creator{}, units: map[int]proc{}, fast: map[fastKey]*Creator{}, named: map[cgtraceCreatorKey]Creator{}, stalls: map[stallKey]*stallAgg{},
		memcgs: newMemcgPaths(opt.Proc), memHier: MemoryHierarchyID(opt.Proc), procFS: procfs.NewProcFS(opt.Proc)}
}

// maxUnitCache bounds the pid → unit cache (a runner forking per job).
const maxUnitCache = 4096

func (a *aggregator) add(e Event) {
	a.events++
	if a.opt.Hierarchy >= 0 && e.Hierarchy != a.opt.Hierarchy {
		return
	}
	a.kept++
	a.count(a.creatorOf(e), e.Op)
}

func (a *aggregator) count(c *Creator, op Op) {
	switch op {
	case Mkdir:
		c.Mkdir++
	case Rmdir:
		c.Rmdir++
	}
}

// fastKey finds a known process' creator without building strings: the
// BPF reader's path for every event after a process' first.
type fastKey struct {
	pid  int
	comm [commLen]byte
}

// addRaw counts one BPF record.
func (a *aggregator) addRaw(raw []byte) {
	if len(raw) < eventSize {
		return
	}
	ne := binary.NativeEndian
	op := Op(ne.Uint32(raw[offOp:]))
	if op == DirectReclaim || op == MemcgReclaim {
		a.addStall(op, int(ne.Uint32(raw[offPID:])), cstr(raw[offComm:offComm+commLen]), ne.Uint64(raw[offMemcg:]),
			time.Duration(ne.Uint64(raw[offDuration:])), int64(ne.Uint64(raw[offReclaimed:])))
		return
	}
	// The kernel side counts the events (and drops those of other
	// hierarchies than the wanted one): a record either names a creator
	// whose operations it counts (its first), or is one operation of a
	// creator it had no room to count.
	hier := int(int32(ne.Uint32(raw[offHierarchy:])))
	if hier == a.memHier {
		// Cgroups seen made or removed are named from here on, even
		// once gone.
		a.memcgs.learn(ne.Uint64(raw[offCgroupID:]), raw[offPath:offPath+pathLen])
	}
	if ne.Uint32(raw[offCounted:]) != 0 {
		var k cgtraceCreatorKey
		k.MemcgId = ne.Uint64(raw[offMemcg:])
		copy(k.Comm[:], raw[offComm:offComm+commLen])
		e, _ := decode(raw)
		c := a.creatorOf(e)
		if len(a.named) >= maxUnitCache {
			clear(a.named)
		}
		a.named[k] = Creator{Comm: c.Comm, Unit: c.Unit, Parent: c.Parent, Cgroup: c.Cgroup, Example: c.Example}
		return
	}
	k := fastKey{pid: int(ne.Uint32(raw[offPID:]))}
	copy(k.comm[:], raw[offComm:offComm+commLen])
	if c := a.fast[k]; c != nil {
		a.count(c, op)
		return
	}
	e, _ := decode(raw)
	c := a.creatorOf(e)
	if len(a.fast) >= maxUnitCache {
		clear(a.fast)
	}
	a.fast[k] = c
	a.count(c, op)
}

// addCounted adds the operations the kernel side counted for one creator
// (its name and memory cgroup), named by the record of its first
// operation, else (that record lost, or a creator counted before the
// names were forgotten) by its name and memory cgroup alone.
func (a *aggregator) addCounted(k cgtraceCreatorKey, mkdir, rmdir int64) {
	t, ok := a.named[k]
	if !ok {
		memcg := a.memcgs.name(k.MemcgId)
		t = Creator{Comm: cstr(k.Comm[:]), Cgroup: memcg, Unit: UnitOf(memcg)}
	}
	key := creatorKey{t.Comm, t.Unit}
	c := a.creators[key]
	if c == nil && len(a.creators) >= maxKeys {
		key = creatorKey{Other, ""}
		t = Creator{Comm: Other}
		c = a.creators[key]
	}
	if c == nil {
		c = &t
		a.creators[key] = c
	}
	c.Mkdir += mkdir
	c.Rmdir += rmdir
}

// creatorOf finds or makes the event's creator, reading the process' unit
// and parent once.
func (a *aggregator) creatorOf(e Event) *Creator {
	p := a.procOf(e.PID, e.PPID, e.MemcgID)
	unit := p.unit
	e.PPID = p.ppid
	k := creatorKey{e.Comm, unit}
	c := a.creators[k]
	if c == nil && len(a.creators) >= maxKeys {
		k = creatorKey{Other, ""}
		e = Event{Comm: Other}
		p, unit = proc{}, ""
		c = a.creators[k]
	}
	if c == nil {
		c = &Creator{Comm: e.Comm, Unit: unit, Cgroup: p.memcg, Example: e.Path}
		if comm, err := a.procFS.ProcComm(e.PPID); e.PPID > 0 && err == nil {
			c.Parent = strings.TrimSpace(comm)
		}
		a.creators[k] = c
	}
	return c
}

// procOf reads a process' parent, unit and memory cgroup once. The memory
// cgroup the kernel recorded with the event (memcgID, BPF) comes first: it
// is the one at the time of the event, and still known when the process
// is gone. A process whose unit cannot be read (gone) is named by that
// memory cgroup, else by its parent's unit.
func (a *aggregator) procOf(pid, ppid int, memcgID uint64) proc {
	p, ok := a.units[pid]
	if !ok {
		p = proc{ppid: ppid}
		if p.ppid == 0 { // tracefs and reclaim records: no parent
			p.ppid = a.ppidOf(pid)
		}
		p.unit, p.memcg = a.cgroupsOf(pid)
		if p.unit == "" && p.ppid > 0 {
			p.parentUnit, _ = a.cgroupsOf(p.ppid)
		}
		if len(a.units) >= maxUnitCache {
			clear(a.units)
		}
		a.units[pid] = p
	}
	if n := a.memcgs.name(memcgID); n != "" {
		p.memcg = n
	}
	if p.unit == "" {
		p.unit = UnitOf(p.memcg)
		if p.memcg == "" {
			p.unit = p.parentUnit
		}
	}
	return p
}

// ppidOf reads the parent's pid from /proc/PID/stat (0 when gone).
func (a *aggregator) ppidOf(pid int) int {
	st, err := a.procFS.ProcStat(pid)
	if err != nil {
		return 0
	}
	return st.PPID
}

// cgroupsOf reads the process' cgroup: its systemd unit (the innermost
// .service or .scope, from the name=systemd line on v1 or the unified
// line) or else its path; and its memory cgroup's path.
func (a *aggregator) cgroupsOf(pid int) (unit, memcg string) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/cgroup", a.opt.Proc, pid))
	if err != nil {
		return "", ""
	}
	var sd, unified string
	for _, l := range cgroups.ParseProcCgroup(b) {
		switch {
		case len(l.Controllers) == 1 && l.Controllers[0] == "name=systemd":
			sd = l.Path
		case l.Unified():
			unified = l.Path
		case l.Has("memory"):
			memcg = l.Path
		}
	}
	p := sd
	if p == "" || p == "/" {
		p = unified
	}
	if memcg == "" {
		memcg = unified
	}
	return UnitOf(p), memcg
}

// UnitOf names a cgroup path by its innermost systemd unit (.service,
// .scope), else returns the path.
func UnitOf(p string) string {
	el := strings.Split(p, "/")
	for i := len(el) - 1; i >= 0; i-- {
		if strings.HasSuffix(el[i], ".service") || strings.HasSuffix(el[i], ".scope") {
			return el[i]
		}
	}
	return p
}

// reset forgets the counts (the caches of processes and names stay).
func (a *aggregator) reset() {
	a.events, a.kept, a.durs = 0, 0, 0
	clear(a.creators)
	clear(a.fast)
	clear(a.stalls)
}

func (a *aggregator) summary(method string, d time.Duration, dropped int64) *Summary {
	s := &Summary{Method: method, Seconds: d.Seconds(), Events: a.events, Kept: a.kept, Dropped: dropped}
	for _, c := range a.creators {
		s.Creators = append(s.Creators, *c)
	}
	for _, st := range a.stalls {
		st.P99 = p99(st.durs)
		s.Stalls = append(s.Stalls, st.Stall)
	}
	sort.Slice(s.Stalls, func(i, j int) bool {
		a, b := s.Stalls[i], s.Stalls[j]
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Kind+a.Comm+a.Cgroup < b.Kind+b.Comm+b.Cgroup
	})
	sort.Slice(s.Creators, func(i, j int) bool {
		a, b := s.Creators[i], s.Creators[j]
		if x, y := a.Mkdir+a.Rmdir, b.Mkdir+b.Rmdir; x != y {
			return x > y
		}
		return a.Comm+a.Unit < b.Comm+b.Unit
	})
	return s
}

// MemoryHierarchyID is the memory controller's hierarchy id from
// /proc/cgroups (0 when it is on the unified tree), or -1.
func MemoryHierarchyID(proc string) int {
	return cgroups.MemoryHierarchyID(procFS(proc))
}

// TopCreators is how many creators (and stall rows) a summary exports as
// series; the rest are summed in one named Other.
const TopCreators = 10

// AddTo adds the trace's series to a snapshot: counts over the window, whose
// length is memdoctor_cgroup_trace_seconds (rates are count / seconds).
// With named, the oldest dying cgroups are series of their own, labelled
// with their path (check); without, only the oldest age is (a recording,
// whose series must not grow with every job's cgroup).
func (s *Summary) AddTo(sc *sample.Snapshot, named bool) {
	sc.Add("memdoctor_cgroup_trace_seconds", s.Seconds, "method", s.Method)
	sc.Add("memdoctor_cgroup_trace_events", float64(s.Events))
	sc.Add("memdoctor_cgroup_trace_memory_events", float64(s.Kept))
	sc.Add("memdoctor_cgroup_trace_dropped", float64(s.Dropped))
	var rest Creator
	for i, c := range s.Creators {
		if i >= TopCreators || c.Comm == Other {
			rest.Mkdir += c.Mkdir
			rest.Rmdir += c.Rmdir
			continue
		}
		addOps(sc, c)
	}
	if rest.Mkdir+rest.Rmdir > 0 {
		rest.Comm = Other
		addOps(sc, rest)
	}
	if s.DyingTraced {
		sc.Add("memdoctor_cgroup_trace_dying", float64(s.Dying))
		sc.Add("memdoctor_cgroup_trace_dying_untracked", float64(s.DyingUntracked))
		if len(s.OldestDying) > 0 {
			sc.Add("memdoctor_cgroup_trace_dying_oldest_seconds", s.OldestDying[0].Age.Seconds())
		}
		if named {
			for _, d := range s.OldestDying {
				sc.Add("memdoctor_cgroup_trace_dying_age_seconds", d.Age.Seconds(), "cgroup", d.Path, "id", strconv.FormatUint(d.ID, 10))
			}
		}
	}
	if !s.ReclaimTraced {
		return
	}
	sc.Add("memdoctor_reclaim_trace_seconds", s.Seconds)
	for _, w := range s.KswapdWakes {
		sc.Add("memdoctor_reclaim_trace_kswapd_wakes", float64(w.Wakes), "node", strconv.Itoa(w.Node))
	}
	rests := map[string]*Stall{}
	var kinds []string
	for i, st := range s.Stalls {
		if i >= TopCreators || st.Comm == Other {
			r := rests[st.Kind]
			if r == nil {
				r = &Stall{Kind: st.Kind, Comm: Other}
				rests[st.Kind] = r
				kinds = append(kinds, st.Kind)
			}
			r.Count += st.Count
			r.Total += st.Total
			r.Max = max(r.Max, st.Max)
			r.P99 = max(r.P99, st.P99) // an upper bound of the rows' p99
			r.Reclaimed += st.Reclaimed
			continue
		}
		addStall(sc, st)
	}
	for _, k := range kinds {
		addStall(sc, *rests[k])
	}
}

func addOps(sc *sample.Snapshot, c Creator) {
	for _, op := range []struct {
		name string
		n    int64
	}{{"mkdir", c.Mkdir}, {"rmdir", c.Rmdir}} {
		sc.Add("memdoctor_cgroup_trace_ops", float64(op.n), "op", op.name, "comm", c.Comm, "unit", c.Unit, "parent", c.Parent, "cgroup", c.Cgroup)
	}
}

func addStall(sc *sample.Snapshot, st Stall) {
	l := []string{"kind", st.Kind, "comm", st.Comm, "cgroup", st.Cgroup}
	sc.Add("memdoctor_reclaim_trace_stalls", float64(st.Count), l...)
	sc.Add("memdoctor_reclaim_trace_stall_seconds", st.Total.Seconds(), l...)
	sc.Add("memdoctor_reclaim_trace_stall_p99_seconds", st.P99.Seconds(), l...)
	sc.Add("memdoctor_reclaim_trace_stall_max_seconds", st.Max.Seconds(), l...)
	sc.Add("memdoctor_reclaim_trace_reclaimed_pages", float64(st.Reclaimed), l...)
}
