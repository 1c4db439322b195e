//go:build linux && (amd64 || arm64)

package leaktrace

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/elfsym"
	"github.com/memdoctor/memdoctor/internal/heapprof"
	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Layout of struct sample in leaktrace.c, from its generated Go twin.
var (
	offSize    = int(unsafe.Offsetof(leaktraceSample{}.Size))
	offStack   = int(unsafe.Offsetof(leaktraceSample{}.Stack))
	sampleSize = int(unsafe.Sizeof(leaktraceSample{}))
)

// probe is one libc function: its entry program, and its return program
// (nil: only the entry is probed).
type probe struct {
	symbol       string
	kind         int // leaktrace.c's enum kind
	enter, leave *ebpf.Program
}

func (o *leaktraceObjects) probes() []probe {
	return []probe{
		{"malloc", 1, o.MallocEnter, o.MallocLeave},
		{"calloc", 2, o.CallocEnter, o.CallocLeave},
		{"realloc", 3, o.ReallocEnter, o.ReallocLeave},
		{"memalign", 4, o.MemalignEnter, o.MemalignLeave},
		{"posix_memalign", 5, o.PosixMemalignEnter, o.PosixMemalignLeave},
		{"aligned_alloc", 6, o.AlignedAllocEnter, o.AlignedAllocLeave},
		{"free", 7, o.FreeEnter, nil},
	}
}

// unavailable wraps why BPF cannot be used here.
func unavailable(what string, err error) error {
	hint := ""
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		hint = " (it needs root: CAP_BPF and CAP_PERFMON; a locked-down kernel refuses it to root too)"
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		hint = " (the kernel lacks uprobes or BPF)"
	}
	return fmt.Errorf("%w: %s: %w%s; %s", ErrUnavailable, what, err, hint, fallback)
}

// Run traces opt.PID until opt.Duration passes, ctx ends, the target
// exits or opt.MaxSamples allocations were sampled, whichever comes
// first. The probes are detached before it returns, on every path.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if err := opt.check(); err != nil {
		return nil, err
	}
	libc, maps, err := findLibc(opt.PID)
	if err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(opt.PID, 0)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", opt.PID, err)
	}
	defer func() { _ = unix.Close(pidfd) }()
	if _, err := os.Stat("/sys/bus/event_source/devices/uprobe"); err != nil {
		return nil, unavailable("the kernel has no uprobe events", err)
	}
	if err := procfs.RemoveMemlockForBPF(); err != nil {
		return nil, unavailable("memlock limit", err)
	}
	spec, err := loadLeaktrace()
	if err != nil {
		return nil, err
	}
	for name, v := range map[string]any{"target_tgid": uint32(opt.PID), "rate": opt.Rate, "max_samples": opt.MaxSamples} {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	spec.Maps["live"].MaxEntries = MaxLive
	var objs leaktraceObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("the verifier refused the program: %w", ve)
		}
		return nil, unavailable("loading the programs", err)
	}
	defer func() { _ = objs.Close() }()

	hit, step, err := calibrate(&objs)
	if err != nil {
		return nil, unavailable("timing a probe on memdoctor itself", err)
	}
	if err := objs.Percpu.Update(uint32(0), make([]leaktraceCounters, ebpf.MustPossibleCPU()), ebpf.UpdateAny); err != nil {
		return nil, fmt.Errorf("resetting the counters: %w", err)
	}

	t := &tracer{objs: &objs, pid: opt.PID}
	defer t.detach() // never leave probes behind
	lib, err := openLibc(opt.PID, maps, libc)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lib.Close() }() // read-only
	if err := t.attachEntries(ctx, lib, libc); err != nil {
		return nil, err
	}
	// The count-only phase: calls per second, for the estimate.
	began := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(opt.Count):
	}
	window := time.Since(began)
	var cs []leaktraceCounters
	if err := objs.Percpu.Lookup(uint32(0), &cs); err != nil {
		return nil, fmt.Errorf("reading the counters: %w", err)
	}
	est := Estimate{ProbeHit: hit, ProbeStep: step, Window: window,
		Duration: opt.Duration, MaxSamples: opt.MaxSamples, MaxLive: MaxLive, Libc: libc}
	returns := map[string]bool{}
	for _, p := range objs.probes() {
		if t.skip[p.symbol] || !t.attached[p.symbol] {
			continue
		}
		f := FuncEstimate{Name: p.symbol, Stepped: t.stepped[p.symbol]}
		for _, c := range cs {
			f.Calls += c.Calls[p.kind]
		}
		est.Functions = append(est.Functions, f)
		returns[p.symbol] = p.leave != nil
	}
	est.estimate(returns)
	if opt.Estimate != nil {
		if err := opt.Estimate(est); err != nil {
			return nil, err
		}
	}
	if !alive(pidfd) {
		return nil, fmt.Errorf("pid %d exited before sampling started", opt.PID)
	}

	// Sampling: return probes first, so that no sampled call misses its return.
	if err := t.attachReturns(libc); err != nil {
		return nil, err
	}
	rd, err := ringbuf.NewReader(objs.Events)
	if err != nil {
		return nil, fmt.Errorf("ring buffer: %w", err)
	}
	defer func() { _ = rd.Close() }()
	if err := objs.Sampling.Set(uint32(1)); err != nil {
		return nil, fmt.Errorf("starting sampling: %w", err)
	}
	start := time.Now()
	end := start.Add(opt.Duration)
	if opt.Started != nil {
		opt.Started()
	}
	res := &Result{Estimate: est, pid: opt.PID, Base: &heapprof.Dump{PID: opt.PID, Rate: opt.Rate, Time: start.UTC(), Maps: maps}}
	var allocRecs []sampleRec
	drain := func(until time.Time) error {
		rd.SetDeadline(until)
		var rec ringbuf.Record
		for {
			err := rd.ReadInto(&rec)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading the ring buffer: %w", err)
			}
			if len(rec.RawSample) >= sampleSize {
				ne := binary.NativeEndian
				allocRecs = append(allocRecs, sampleRec{size: ne.Uint64(rec.RawSample[offSize:]), stack: int64(ne.Uint64(rec.RawSample[offStack:]))})
			}
		}
	}
	lastMaps := time.Now()
	for res.Ended == "" {
		next := time.Now().Add(200 * time.Millisecond)
		if next.After(end) {
			next = end
		}
		if err := drain(next); err != nil {
			return nil, err
		}
		var n uint64
		_ = objs.Samples.Get(&n)
		switch {
		case ctx.Err() != nil:
			res.Ended = "cancelled"
		case !alive(pidfd):
			res.Ended = "target exited"
		case !time.Now().Before(end):
			res.Ended = "duration"
		case n >= opt.MaxSamples:
			res.Ended = "max samples"
		}
		if res.Ended == "" && time.Since(lastMaps) > time.Second {
			// Libraries loaded since: keep the latest mappings to name them.
			if m, err := procfs.NewFS("/").ProcMaps(opt.PID); err == nil {
				maps = m
			}
			lastMaps = time.Now()
		}
	}
	at := time.Now()
	t.detach()
	if res.Ended != "target exited" {
		if m, err := procfs.NewFS("/").ProcMaps(opt.PID); err == nil {
			maps = m
		}
	}
	if err := drain(time.Now()); err != nil {
		return nil, err
	}
	var live []sampleRec
	var addr uint64
	var b leaktraceBlock
	it := objs.Live.Iterate()
	for it.Next(&addr, &b) {
		live = append(live, sampleRec{size: b.Size, stack: b.Stack})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading the sampled blocks: %w", err)
	}
	var samples, droppedLive uint64
	_ = objs.Samples.Get(&samples)
	_ = objs.DroppedLive.Get(&droppedLive)
	_ = objs.DroppedStack.Get(&res.DroppedStack)
	_ = objs.DroppedEvent.Get(&res.DroppedEvent)
	_ = objs.Capped.Get(&res.Capped)
	stack := func(id int64) []uint64 {
		pcs := make([]uint64, maxDepth)
		if err := objs.Stacks.Lookup(uint32(id), &pcs); err != nil {
			return nil
		}
		return trimStack(pcs)
	}
	res.Dump = buildDump(opt.PID, opt.Rate, at.UTC(), samples, droppedLive, allocRecs, live, stack, maps)
	return res, nil
}

// tracer holds the probes attached to the target.
type tracer struct {
	objs  *leaktraceObjects
	pid   int
	links []link.Link
	ex    *link.Executable
	skip  map[string]bool // functions at the address of another one
	// offsets: where each function begins in the library file.
	offsets map[string]uint64
	// attached: the entries probed; stepped: those whose first
	// instruction the kernel steps out of line.
	attached, stepped map[string]bool
}

// detach removes every probe (idempotent).
func (t *tracer) detach() {
	for _, l := range t.links {
		_ = l.Close()
	}
	t.links = nil
}

// openLibc opens the C library the process maps: the mapped file itself
// (never what its path names now: a FIFO renamed over it, a link), a
// regular file of sane size. Probes are attached through this descriptor
// (/proc/self/fd/N), at the file offsets read from it.
func openLibc(pid int, maps []procfs.Mapping, libc string) (*os.File, error) {
	var first *procfs.Mapping
	for i, m := range maps {
		if m.Path == libc && (first == nil || m.Offset < first.Offset) {
			first = &maps[i]
		}
	}
	if first == nil {
		return nil, fmt.Errorf("pid %d: %s is no longer mapped", pid, libc)
	}
	f, err := inject.OpenMapped(pid, *first)
	if err != nil {
		return nil, fmt.Errorf("opening the C library of pid %d: %w", pid, err)
	}
	return f, nil
}

func (t *tracer) attachEntries(ctx context.Context, lib *os.File, name string) error {
	var err error
	t.skip, t.stepped, t.offsets, err = aliases(ctx, lib, name, t.objs.probes())
	if err != nil {
		return err
	}
	ex, err := link.OpenExecutable(procfs.SelfFDPath(int(lib.Fd())))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	t.ex = ex
	t.attached = map[string]bool{}
	for _, p := range t.objs.probes() {
		if t.skip[p.symbol] {
			continue
		}
		off, ok := t.offsets[p.symbol]
		if !ok {
			if p.symbol != "malloc" && p.symbol != "free" {
				continue // an older libc without it
			}
			return unavailable("attaching to "+p.symbol, fmt.Errorf("%w: %s does not export it", link.ErrNoSymbol, name))
		}
		l, err := ex.Uprobe(p.symbol, p.enter, &link.UprobeOptions{PID: t.pid, Address: off})
		if err != nil {
			return unavailable("attaching to "+p.symbol, err)
		}
		t.links = append(t.links, l)
		t.attached[p.symbol] = true
	}
	return nil
}

func (t *tracer) attachReturns(name string) error {
	for _, p := range t.objs.probes() {
		if p.leave == nil || t.skip[p.symbol] || !t.attached[p.symbol] {
			continue
		}
		l, err := t.ex.Uretprobe(p.symbol, p.leave, &link.UprobeOptions{PID: t.pid, Address: t.offsets[p.symbol]})
		if err != nil {
			return unavailable("attaching to the return of "+p.symbol+" in "+name, err)
		}
		t.links = append(t.links, l)
	}
	return nil
}

// aliases names the functions that share an address with one listed
// before them (aligned_alloc is memalign in older glibc): probing both
// would count their calls twice. It also says which functions begin with
// an instruction the kernel steps out of line, and gives each function's
// offset in the file (where a probe goes). The symbols are read within
// elfsym's bounds: the library is the target's.
func aliases(ctx context.Context, lib *os.File, name string, ps []probe) (skip, stepped map[string]bool, offsets map[string]uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: malformed ELF file: %v", name, r)
		}
	}()
	f, err := elf.NewFile(lib)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.symbol)
	}
	at, err := elfsym.Exported(ctx, f, elfsym.Default, names...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	skip, stepped, offsets = map[string]bool{}, map[string]bool{}, map[string]uint64{}
	seen := map[uint64]bool{}
	for _, p := range ps {
		s, ok := at[p.symbol]
		if !ok {
			continue
		}
		v := s.Value
		if seen[v] {
			skip[p.symbol] = true
		}
		seen[v] = true
		stepped[p.symbol] = true
		for _, pr := range f.Progs {
			if pr.Type == elf.PT_LOAD && pr.Flags&elf.PF_X != 0 && v >= pr.Vaddr && v+4 <= pr.Vaddr+pr.Filesz {
				offsets[p.symbol] = v - pr.Vaddr + pr.Off
				b := make([]byte, 4)
				if _, err := pr.ReadAt(b, int64(v-pr.Vaddr)); err == nil {
					stepped[p.symbol] = !emulated(b)
				}
				break
			}
		}
		if _, ok := offsets[p.symbol]; !ok {
			delete(stepped, p.symbol)
			delete(skip, p.symbol) // outside the code: not probed
		}
	}
	return skip, stepped, offsets, nil
}

// calibrationTarget and calibrationStep are the functions of memdoctor
// itself that calibrate probes. calibrationTarget has a frame and no stack
// check, so that it begins, like glibc's malloc, with a push (which the
// kernel emulates on amd64); calibrationStep begins with a move, stepped
// out of line (a second trap), as glibc's free begins with a test.
//
//go:noinline
//go:nosplit
func calibrationTarget(x uint64) uint64 { return calibrationStep(x) + 1 }

//go:noinline
func calibrationStep(x uint64) uint64 { return x * 2654435761 }

// calibrate times a probe hit on each calibration function: calls without
// and with the calibrate program attached (the best of three rounds).
func calibrate(objs *leaktraceObjects) (hit, step time.Duration, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return 0, 0, err
	}
	maps, err := procfs.NewFS("/").ProcMaps(os.Getpid())
	if err != nil {
		return 0, 0, err
	}
	const n = 2000
	time1 := func(f func(uint64) uint64) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			s := uint64(0)
			t0 := time.Now()
			for i := range uint64(n) {
				s += f(i)
			}
			best = min(best, time.Since(t0))
			runtime.KeepAlive(s)
		}
		return best
	}
	one := func(name string, f func(uint64) uint64) (time.Duration, error) {
		base := time1(f)
		pc := uint64(reflect.ValueOf(f).Pointer())
		var off uint64
		found := false
		for _, m := range maps {
			if pc >= m.Start && pc < m.End {
				off, found = pc-m.Start+m.Offset, true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("no mapping holds memdoctor's own code at 0x%x", pc)
		}
		l, err := ex.Uprobe(name, objs.Calibrate, &link.UprobeOptions{Address: off, PID: os.Getpid()})
		if err != nil {
			return 0, err
		}
		probed := time1(f)
		_ = l.Close()
		return max((probed-base)/n, 0), nil
	}
	// calibrationTarget calls calibrationStep: time the step first, with
	// its probe gone when the target is timed.
	if step, err = one("calibrationStep", calibrationStep); err != nil {
		return 0, 0, err
	}
	if hit, err = one("calibrationTarget", calibrationTarget); err != nil {
		return 0, 0, err
	}
	return hit, step, nil
}
