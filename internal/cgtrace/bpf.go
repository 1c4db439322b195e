package cgtrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Layout of struct event in cgtrace.c, from its generated Go twin.
var (
	offCgroupID  = int(unsafe.Offsetof(cgtraceEvent{}.CgroupId))
	offMemcg     = int(unsafe.Offsetof(cgtraceEvent{}.MemcgId))
	offDuration  = int(unsafe.Offsetof(cgtraceEvent{}.DurationNs))
	offReclaimed = int(unsafe.Offsetof(cgtraceEvent{}.Reclaimed))
	offOp        = int(unsafe.Offsetof(cgtraceEvent{}.Op))
	offCounted   = int(unsafe.Offsetof(cgtraceEvent{}.Counted))
	offPID       = int(unsafe.Offsetof(cgtraceEvent{}.Pid))
	offPPID      = int(unsafe.Offsetof(cgtraceEvent{}.Ppid))
	offHierarchy = int(unsafe.Offsetof(cgtraceEvent{}.Hierarchy))
	offLevel     = int(unsafe.Offsetof(cgtraceEvent{}.Level))
	offComm      = int(unsafe.Offsetof(cgtraceEvent{}.Comm))
	offPath      = int(unsafe.Offsetof(cgtraceEvent{}.Path))
	eventSize    = int(unsafe.Offsetof(cgtraceEvent{}.Path)) + pathLen
)

const (
	commLen = 16
	pathLen = 160
	nameLen = 40
	// bpfStatsRunTime is BPF_STATS_RUN_TIME of linux/bpf.h (named here so
	// the package builds where x/sys/unix lacks Linux's constants).
	bpfStatsRunTime = 0
)

// cstr is the NUL-terminated string at the start of b.
func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func decode(raw []byte) (Event, bool) {
	if len(raw) < eventSize {
		return Event{}, false
	}
	ne := binary.NativeEndian
	return Event{
		Op:        Op(ne.Uint32(raw[offOp:])),
		CgroupID:  ne.Uint64(raw[offCgroupID:]),
		MemcgID:   ne.Uint64(raw[offMemcg:]),
		PID:       int(ne.Uint32(raw[offPID:])),
		PPID:      int(ne.Uint32(raw[offPPID:])),
		Hierarchy: int(int32(ne.Uint32(raw[offHierarchy:]))),
		Level:     int(int32(ne.Uint32(raw[offLevel:]))),
		Comm:      cstr(raw[offComm : offComm+commLen]),
		Path:      cstr(raw[offPath : offPath+pathLen]),
	}, true
}

// bpfTracer is the loaded, attached program.
type bpfTracer struct {
	objs  cgtraceObjects
	links []link.Link
	rd    *ringbuf.Reader
	rec   ringbuf.Record
	// reclaimErr says why reclaim is not traced, dyingErr why removed
	// cgroups are not followed to their release (nil: they are).
	reclaimErr, dyingErr error
	// The counters' values at the last take.
	dropped uint64
	wakes   [maxNodes]uint64
	stats   io.Closer
	// The event counters and each creator's counts at the last fold.
	eventsAll, eventsKept uint64
	counted               map[cgtraceCreatorKey]cgtraceCounts
	// The cgroup programs' run count and time at the last take.
	runs    uint64
	runTime time.Duration
	progs   [len(cgroupPrograms)]ProgramStats
	// The dying table, read in place, and the copy each take reads.
	dyingMem *ebpf.Memory
	dyingBuf []byte
}

// removedSize is the size of a slot of the dying table (struct removed).
const removedSize = int(unsafe.Sizeof(cgtraceRemoved{}))

// Layout of a slot of the dying table, from its generated Go twin.
var (
	offSlotID     = int(unsafe.Offsetof(cgtraceRemoved{}.Id))
	offSlotTs     = int(unsafe.Offsetof(cgtraceRemoved{}.Ts))
	offSlotParent = int(unsafe.Offsetof(cgtraceRemoved{}.ParentId))
	offSlotName   = int(unsafe.Offsetof(cgtraceRemoved{}.Name))
)

// ringBytes is the size of the BPF ring buffer (a power of two), about
// 4,300 records. Most cgroup operations are counts in the kernel, not
// records (a record names a creator, or is a reclaim stall); only past the
// kernel's table of creators is each operation a record: at 10,000 a
// second the kernel side then wakes the reader about five times a second
// (at half full).
const ringBytes = 1 << 20

// cgroupPrograms name the cgroup programs, in the order take reads them.
var cgroupPrograms = [...]string{"cgroup_mkdir", "cgroup_rmdir", "cgroup_release"}

// creatorSlots, when not 0, sizes the kernel side's table of creators
// (MAX_CREATORS otherwise): tests fill it.
var creatorSlots uint32

// maxNodes is the size of the kswapd wake-up counters (MAX_NODES).
const maxNodes = 64

func (t *bpfTracer) Close() {
	if t.rd != nil {
		_ = t.rd.Close()
	}
	for _, l := range t.links {
		_ = l.Close()
	}
	if t.stats != nil {
		_ = t.stats.Close()
	}
	_ = t.objs.Close()
}

func attach(p *ebpf.Program) (link.Link, error) {
	return link.AttachTracing(link.TracingOptions{Program: p, AttachType: ebpf.AttachTraceRawTp})
}

// loadBPF loads and attaches the program; follow is the hierarchy whose
// removed cgroups are followed to their release (-1: none).
func loadBPF(opt Options, follow int) (*bpfTracer, error) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return nil, fmt.Errorf("the kernel has no BTF (/sys/kernel/btf/vmlinux): %w", err)
	}
	if err := procfs.RemoveMemlockForBPF(); err != nil {
		return nil, fmt.Errorf("memlock limit: %w", err)
	}
	spec, err := loadCgtrace()
	if err != nil {
		return nil, fmt.Errorf("reading the program: %w", err)
	}
	// The ring holds ringRecords records; the kernel side wakes the
	// reader when half of it is full, else the reader drains it every
	// opt.Poll.
	if m := spec.Maps[cgtraceMapEvents]; m != nil {
		m.MaxEntries = ringBytes
	}
	if m := spec.Maps[cgtraceMapCreators]; m != nil && creatorSlots > 0 {
		m.MaxEntries = creatorSlots
	}
	if v := spec.Variables[cgtraceVarWakeAt]; v != nil {
		if err := v.Set(uint64(ringBytes / 2)); err != nil {
			return nil, fmt.Errorf("setting the wakeup threshold: %w", err)
		}
	}
	if v := spec.Variables[cgtraceVarWantHierarchy]; v != nil {
		if err := v.Set(int32(opt.Hierarchy)); err != nil {
			return nil, fmt.Errorf("setting the wanted hierarchy: %w", err)
		}
	}
	if v := spec.Variables[cgtraceVarFollowHierarchy]; v != nil {
		if err := v.Set(int32(follow)); err != nil {
			return nil, fmt.Errorf("setting the followed hierarchy: %w", err)
		}
	}
	t := &bpfTracer{counted: map[cgtraceCreatorKey]cgtraceCounts{}}
	if err := spec.LoadAndAssign(&t.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("the verifier refused the program: %w", ve)
		}
		return nil, fmt.Errorf("loading the program: %w", err)
	}
	for _, p := range []*ebpf.Program{t.objs.CgroupMkdir, t.objs.CgroupRmdir} {
		l, err := attach(p)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("attaching to the cgroup tracepoints: %w", err)
		}
		t.links = append(t.links, l)
	}
	if follow < 0 {
		t.dyingErr = errors.New("removed cgroups not followed: the memory controller's hierarchy is not known")
	} else if l, err := attach(t.objs.CgroupRelease); err != nil {
		t.dyingErr = fmt.Errorf("removed cgroups not followed: attaching to cgroup:cgroup_release: %w", err)
	} else {
		t.links = append(t.links, l)
	}
	// Reclaim is a second look: without it the cgroup trace still runs.
	for _, p := range []*ebpf.Program{t.objs.DirectReclaimBegin, t.objs.DirectReclaimEnd,
		t.objs.MemcgReclaimBegin, t.objs.MemcgReclaimEnd, t.objs.KswapdWake} {
		l, err := attach(p)
		if err != nil {
			t.reclaimErr = fmt.Errorf("reclaim stalls not traced: attaching to the vmscan tracepoints: %w", err)
			break
		}
		t.links = append(t.links, l)
	}
	rd, err := ringbuf.NewReader(t.objs.Events)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("ring buffer: %w", err)
	}
	t.rd = rd
	if opt.KernelStats {
		if st, err := ebpf.EnableStats(bpfStatsRunTime); err == nil {
			t.stats = st
		}
	}
	return t, nil
}

// drain reads what the ring holds until the deadline (or a Flush); an
// error says the ring cannot be read any more.
func (t *bpfTracer) drain(deadline time.Time, add func([]byte)) error {
	t.rd.SetDeadline(deadline)
	for {
		err := t.rd.ReadInto(&t.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrFlushed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the ring buffer: %w", err)
		}
		add(t.rec.RawSample)
	}
}

// fold adds to a what the kernel side counted since the last fold: the
// cgroup operations, and each creator's. A creator with no operation since
// the last fold leaves the kernel's table, so that the table holds the
// active ones (one that comes back is named again by a record).
func (t *bpfTracer) fold(a *aggregator) {
	var all, kept uint64
	if t.objs.EventsAll.Get(&all) == nil && t.objs.EventsKept.Get(&kept) == nil {
		a.events += int64(all - t.eventsAll)
		a.kept += int64(kept - t.eventsKept)
		t.eventsAll, t.eventsKept = all, kept
	}
	var (
		k     cgtraceCreatorKey
		v     cgtraceCounts
		quiet []cgtraceCreatorKey
	)
	it := t.objs.Creators.Iterate()
	for it.Next(&k, &v) {
		last := t.counted[k]
		if v == last {
			quiet = append(quiet, k)
			continue
		}
		t.counted[k] = v
		a.addCounted(k, int64(v.Mkdir-last.Mkdir), int64(v.Rmdir-last.Rmdir))
	}
	for _, k := range quiet {
		_ = t.objs.Creators.Delete(&k) // gone already: nothing to forget
		delete(t.counted, k)
	}
}

// take adds the kernel side's counters since the last take to s, and the
// removed cgroups still dying; names names them.
func (t *bpfTracer) take(s *Summary, opt Options, names *memcgPaths) {
	var dropped, untracked uint64
	_ = t.objs.Dropped.Get(&dropped)
	_ = t.objs.DyingUntracked.Get(&untracked)
	s.Dropped = int64(dropped - t.dropped)
	t.dropped = dropped
	if t.reclaimErr != nil {
		s.Notes = append(s.Notes, t.reclaimErr.Error())
	} else {
		s.ReclaimTraced = true
		var wakes [maxNodes]uint64
		if err := t.objs.KswapdWakes.Get(&wakes); err == nil {
			for nid, n := range wakes {
				if d := n - t.wakes[nid]; d > 0 {
					s.KswapdWakes = append(s.KswapdWakes, NodeWakes{Node: nid, Wakes: int64(d)})
				}
			}
			t.wakes = wakes
		}
	}
	if t.dyingErr != nil {
		s.Notes = append(s.Notes, t.dyingErr.Error())
	} else {
		s.DyingTraced = true
		s.DyingUntracked = int64(untracked)
		s.Dying, s.OldestDying = t.dying(names)
	}
	if opt.KernelStats {
		// The kernel's counts are since the program was loaded: the
		// summary has those since the last take.
		var runs uint64
		var runTime time.Duration
		for i, p := range []*ebpf.Program{t.objs.CgroupMkdir, t.objs.CgroupRmdir, t.objs.CgroupRelease} {
			if st, err := p.Stats(); err == nil {
				last := t.progs[i]
				s.KernelPrograms = append(s.KernelPrograms, ProgramStats{Name: cgroupPrograms[i],
					Runs: st.RunCount - last.Runs, Time: st.Runtime - last.Time})
				t.progs[i] = ProgramStats{Runs: st.RunCount, Time: st.Runtime}
				runs += st.RunCount
				runTime += st.Runtime
			}
		}
		s.KernelRuns, s.KernelTime = runs-t.runs, runTime-t.runTime
		t.runs, t.runTime = runs, runTime
	}
}

// dying counts the cgroups removed while tracing and not released yet,
// and returns the oldest (at most OldestDyingKept), named where known.
func (t *bpfTracer) dying(names *memcgPaths) (int64, []DyingCgroup) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, nil
	}
	now := uint64(ts.Nano())
	if t.dyingMem == nil {
		m, err := t.objs.Dying.Memory()
		if err != nil {
			return 0, nil
		}
		t.dyingMem = m
		t.dyingBuf = make([]byte, m.Size())
	}
	if _, err := t.dyingMem.ReadAt(t.dyingBuf, 0); err != nil {
		return 0, nil
	}
	var (
		n   int64
		out []DyingCgroup
	)
	ne := binary.NativeEndian
	for off := 0; off+removedSize <= len(t.dyingBuf); off += removedSize {
		b := t.dyingBuf[off:]
		id, ts := ne.Uint64(b[offSlotID:]), ne.Uint64(b[offSlotTs:])
		if id == 0 {
			continue
		}
		n++
		age := time.Duration(0)
		if ts != 0 && now > ts { // 0: being written, removed just now
			age = time.Duration(now - ts)
		}
		out = append(out, DyingCgroup{ID: id, Age: age, slot: off})
		if len(out) >= 4*OldestDyingKept {
			out = oldest(out)
		}
	}
	out = oldest(out)
	for i := range out {
		b := t.dyingBuf[out[i].slot:]
		out[i].Path = t.dyingName(out[i].ID, ne.Uint64(b[offSlotParent:]), cstr(b[offSlotName:offSlotName+nameLen]), names)
	}
	return n, out
}

// dyingName is a removed cgroup's path: as the trace saw it made or
// removed, else its parent's path (a walk finds the live ones) and the
// name the kernel side kept ("" when neither is known).
func (t *bpfTracer) dyingName(id, parentID uint64, name string, names *memcgPaths) string {
	if p := names.known(id); p != "" {
		return p
	}
	if name == "" {
		return ""
	}
	switch parent := names.name(parentID); parent {
	case "":
		return ""
	case "/":
		return "/" + name
	default:
		return parent + "/" + name
	}
}

// oldest keeps the OldestDyingKept oldest, oldest first.
func oldest(ds []DyingCgroup) []DyingCgroup {
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].Age != ds[j].Age {
			return ds[i].Age > ds[j].Age
		}
		return ds[i].ID < ds[j].ID
	})
	return ds[:min(len(ds), OldestDyingKept)]
}
