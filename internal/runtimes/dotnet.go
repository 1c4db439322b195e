package runtimes

// .NET processes read through their diagnostics port (internal/dotnet):
// check opens one EventPipe session at the GC keyword on each .NET
// process for its GC interval, and the second reading carries what the
// session saw. The first reading's counters are zero (the session's
// start), so the rules' recent rates are the window's; no start time is
// given, as the counts are not the process' lifetime's.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/dotnet"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/redact"
	"github.com/memdoctor/memdoctor/internal/safeio"
)

// SourceEventPipe is the source of a .NET reading from its diagnostics
// port.
const SourceEventPipe = "eventpipe"

// Series only the port gives.
const (
	// LargeAllocated counts bytes allocated on the large-object heap, as
	// the runtime's allocation ticks sample them (one per ~100 KB).
	LargeAllocated = "memdoctor_runtime_gc_large_allocated_bytes_total"
	// LargeTriggered counts collections triggered by large-object
	// allocation (.NET reasons AllocLarge and OutOfSpaceLOH), label
	// generation.
	LargeTriggered = "memdoctor_runtime_gc_large_triggered_total"
	// GCSettingsInfo is 1, with a label per GC setting found in force:
	// gc (server, workstation), concurrent (true, false), heaps,
	// latency_mode, heap_hard_limit_percent, gen0size,
	// dynamic_adaptation, and from (where they came from: variables, the
	// runtimeconfig.json's name, events). The heap hard limit in bytes is
	// HeapLimit.
	GCSettingsInfo = "memdoctor_runtime_gc_settings_info"
	// InducedCaller counts induced collections by the method named as
	// the caller of GC.Collect() (label caller), from the stacks of the
	// collections' triggers resolved against the runtime's rundown.
	InducedCaller = "memdoctor_runtime_gc_induced_caller_total"
	// ProcessInfoSeries is 1, with labels os, arch, runtime_cookie and
	// command_line (its secrets masked): the runtime's answer to
	// ProcessInfo (.NET 5 on).
	ProcessInfoSeries = "memdoctor_runtime_process_info"
)

// liveRoot says whether fsys is this host's own root (a capture has no
// sockets to speak to).
func liveRoot(fsys procfs.FS) bool {
	d, ok := fsys.Sys().(safeio.DirFS)
	return ok && d.Root() == "/"
}

// coreclrVersion reads the runtime's version from its directory
// (.../Microsoft.NETCore.App/3.1.23/libcoreclr.so).
func coreclrVersion(evidence string) string {
	v := path.Base(path.Dir(evidence))
	if v != "" && v[0] >= '0' && v[0] <= '9' && len(v) <= 32 {
		return v
	}
	return ""
}

// DotNetWatch runs one GC session on each .NET process read through its
// port, from StartDotNet until Stop.
type DotNetWatch struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	stats   map[int]*dotnet.GCStats
	counts  map[int]*dotnet.Counters
	callers map[int][]dotnet.Caller
	errs    map[int]error
	window  map[int]time.Duration
	// started counts the sessions.
	started int

	// A recorder's watch (NewDotNetRecorder) holds a session on each .NET
	// process across readings: the first reading of a process starts it,
	// each reading takes its totals so far.
	continuous bool
	verbose    bool
	ctx        context.Context
	live       map[int]*liveSession
}

// liveSession is one process' session held across readings: its totals
// since it started.
type liveSession struct {
	mu   sync.Mutex
	st   *dotnet.GCStats
	cn   *dotnet.Counters
	err  error
	done bool
}

// maxLiveSession is how long one session of a recorder's watch runs
// before it is stopped and another started, adding to the same totals
// (so the stream's size cap is never reached).
const maxLiveSession = 10 * time.Minute

// NewDotNetRecorder returns a watch that holds one session on each .NET
// process it is asked to read, until the process goes or Stop: the
// recorder's counters are then the process' since memdoctor began to
// follow it. verbose adds the allocation ticks.
func NewDotNetRecorder(verbose bool) *DotNetWatch {
	ctx, cancel := context.WithCancel(context.Background())
	return &DotNetWatch{cancel: cancel, continuous: true, verbose: verbose, ctx: ctx, live: map[int]*liveSession{}}
}

// follow returns the totals of pid's session (copies), starting one when
// there is none: nil totals then. A session that ended (the process
// went, or its port failed) gives its error once and is started again at
// the next reading.
func (w *DotNetWatch) follow(pid int) (*dotnet.GCStats, *dotnet.Counters, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return nil, nil, w.ctx.Err()
	}
	ls := w.live[pid]
	if ls == nil {
		ls = &liveSession{st: dotnet.NewGCStats(), cn: dotnet.NewCounters()}
		w.live[pid] = ls
		w.started++
		w.wg.Add(1)
		go w.hold(pid, ls)
		return nil, nil, nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.done {
		delete(w.live, pid)
		return nil, nil, ls.err
	}
	return ls.st.Clone(), ls.cn.Clone(), nil
}

// hold runs pid's sessions one after the other until the watch stops or
// one fails.
func (w *DotNetWatch) hold(pid int, ls *liveSession) {
	defer w.wg.Done()
	for w.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(w.ctx, maxLiveSession)
		err := traceInto(ctx, pid, w.verbose, false, func(e *dotnet.Event) {
			ls.mu.Lock()
			ls.st.Add(e)
			ls.cn.Add(e)
			ls.mu.Unlock()
		})
		cancel()
		if err != nil && w.ctx.Err() == nil {
			ls.mu.Lock()
			ls.err, ls.done = err, true
			ls.mu.Unlock()
			return
		}
	}
}

// StartDotNet starts a session on every reading of res whose source is
// the port. verbose adds the allocation ticks (the LOH allocation rate).
//
// headroom (nil: unknown) says how much more a process' memory cgroup may
// be charged before a limit (limited false: none): the rundown that names
// the callers of GC.Collect() takes its buffer from the target's memory,
// and asks at most a quarter of that (dotnet.RundownBufferFor).
func StartDotNet(ctx context.Context, res *Result, verbose bool, headroom func(pid int) (bytes int64, limited bool, err error)) *DotNetWatch {
	// parent ends when check is interrupted; the sessions' ctx at Stop.
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	w := &DotNetWatch{cancel: cancel, stats: map[int]*dotnet.GCStats{}, counts: map[int]*dotnet.Counters{}, callers: map[int][]dotnet.Caller{},
		errs: map[int]error{}, window: map[int]time.Duration{}}
	for _, rd := range res.Readings {
		if rd.Runtime != DotNet || rd.Source != SourceEventPipe {
			continue
		}
		pid := rd.PID
		w.started++
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			start := time.Now()
			st, cn, cl, err := traceGC(ctx, pid, verbose)
			window := time.Since(start)
			var named []dotnet.Caller
			if err == nil && parent.Err() == nil {
				named = namedCallers(parent, pid, cl, headroom)
			}
			w.mu.Lock()
			w.stats[pid], w.counts[pid], w.callers[pid], w.errs[pid], w.window[pid] = st, cn, named, err, window
			w.mu.Unlock()
		}()
	}
	return w
}

// traceGC runs one session with the GC events and the System.Runtime
// counters (every second), keeping the stacks of the induced
// collections.
func traceGC(ctx context.Context, pid int, verbose bool) (*dotnet.GCStats, *dotnet.Counters, *dotnet.Callers, error) {
	st, cn, cl := dotnet.NewGCStats(), dotnet.NewCounters(), dotnet.NewCallers()
	err := traceInto(ctx, pid, verbose, true, func(e *dotnet.Event) {
		st.Add(e)
		cn.Add(e)
		cl.Add(e)
	})
	return st, cn, cl, err
}

func traceInto(ctx context.Context, pid int, verbose, stacks bool, fn func(*dotnet.Event)) error {
	ep, err := dotnet.Find(pid)
	if err != nil {
		return err
	}
	defer func() { _ = ep.Close() }()
	provs := append(dotnet.GCProviders(verbose), dotnet.CounterProvider(1))
	_, err = dotnet.Trace(ctx, ep.Dial, dotnet.SessionOptions{Providers: provs, KeepStacks: stacks}, fn)
	return err
}

// unknownHeadroomRundownMB is the rundown's buffer for a process whose
// memory cgroup could not be read: what the GC session asks.
const unknownHeadroomRundownMB = 16

// rundownDrain bounds the reading of a rundown after its session's stop.
const rundownDrain = 10 * time.Second

// namedCallers names the callers of the induced collections whose stacks
// cl kept: when an address is not named yet, a second session, stopped at
// once, reads the runtime's rundown (the methods loaded, with their code
// ranges); the frames no method covers are named by the target's memory
// map (the runtime's own native code is plumbing). Only a process that
// had induced collections pays for it.
func namedCallers(ctx context.Context, pid int, cl *dotnet.Callers, headroom func(int) (int64, bool, error)) []dotnet.Caller {
	if cl == nil || cl.Induced == 0 || cl.Addresses() == 0 {
		return nil
	}
	// Unknown headroom: the buffer the GC session itself asked.
	bufferMB, ok := uint32(unknownHeadroomRundownMB), true
	if headroom != nil {
		if h, limited, err := headroom(pid); err == nil {
			bufferMB, ok = dotnet.RundownBufferFor(h, limited)
		}
	}
	if cl.Unresolved() && ok {
		ep, err := dotnet.Find(pid)
		if err != nil {
			return nil
		}
		// A rundown cut short (its stop unanswered, its stream past the
		// drain) still names what it read: each name read is the
		// runtime's own record of a method's code.
		_, _ = dotnet.RundownMethodsWithin(ctx, ep.Dial, rundownDrain, bufferMB, cl.Add)
		_ = ep.Close()
	}
	if maps, err := procfs.Live().ProcMaps(pid); err == nil {
		cl.Native = func(a uint64) string {
			i := sort.Search(len(maps), func(i int) bool { return maps[i].End > a })
			if i < len(maps) && maps[i].Start <= a {
				return maps[i].Path
			}
			return ""
		}
	}
	named, _ := cl.Named()
	return named
}

// Empty says whether no session was started.
func (w *DotNetWatch) Empty() bool { return w == nil || w.started == 0 }

// Stop ends every session (each sends StopTracing and reads the stream's
// end within its bounds) and waits for them.
func (w *DotNetWatch) Stop() {
	if w == nil {
		return
	}
	w.cancel()
	w.wg.Wait()
}

// dotnetReading is the reading of a .NET process: from its session when
// the watch has one, else zero counters when its port can be found (the
// session's start), else nil.
func dotnetReading(fsys procfs.FS, w *DotNetWatch, pid int, comm string, det Detection) (*Reading, string, error) {
	rd := &Reading{Target: "pid/" + strconv.Itoa(pid), Runtime: DotNet, Version: det.Version, Source: SourceEventPipe, PID: pid, Comm: comm}
	if rd.Version == "" {
		rd.Version = coreclrVersion(det.Evidence)
	}
	var st *dotnet.GCStats
	var cn *dotnet.Counters
	var callers []dotnet.Caller
	zero := false
	switch {
	case w == nil:
		zero = true
	case w.continuous:
		var err error
		if st, cn, err = w.follow(pid); err != nil {
			return nil, "", err
		}
		zero = st == nil
	default:
		w.mu.Lock()
		var err error
		st, cn, callers, err = w.stats[pid], w.counts[pid], w.callers[pid], w.errs[pid]
		w.mu.Unlock()
		if st == nil {
			if err == nil {
				err = fmt.Errorf("no session")
			}
			return nil, "", err
		}
		if err != nil && st.Events == 0 {
			return nil, "", err
		}
	}
	if zero {
		ep, err := dotnet.Find(pid)
		if err != nil {
			return nil, "", err
		}
		_ = ep.Close()
		rd.add(GCSeconds, 0)
		rd.add(Collections, 0, "generation", Young)
		rd.add(Collections, 0, "generation", Old)
		rd.add(LargeTriggered, 0, "generation", Old)
		rd.add(LargeAllocated, 0)
		rd.add(Allocated, 0)
		st = nil
	} else {
		rd.add(GCSeconds, st.PauseSeconds)
		rd.add(Collections, float64(st.Collections[0]+st.Collections[1]), "generation", Young)
		rd.add(Collections, float64(st.Collections[2]), "generation", Old)
		for _, c := range inducedCauses(st) {
			rd.add(Induced, float64(st.InducedBy[c]), "cause", c)
		}
		for _, c := range callers {
			rd.add(InducedCaller, float64(c.Count), "caller", c.Name)
		}
		rd.add(LargeTriggered, float64(st.LargeTriggered[2]), "generation", Old)
		rd.add(LargeAllocated, float64(st.AllocLarge))
		if st.HeapSeen {
			rd.add(HeapLive, float64(st.Gen[0]+st.Gen[1]+st.Gen[2]+st.LOH+st.POH))
			rd.add(LargeObjects, float64(st.LOH))
		}
		addCounters(rd, st, cn)
	}
	if s, err := fsys.ProcStatus(pid); err == nil {
		if v, ok := s.Get("VmRSS"); ok {
			rd.add(Resident, float64(v))
		}
	}
	info, env, note := dotnetIPC(pid)
	if info != nil {
		cmd := redact.CommandLine(info.CommandLine)
		if len(cmd) > maxCommandLine {
			cmd = cmd[:maxCommandLine] + "..."
		}
		rd.add(ProcessInfoSeries, 1, "os", info.OS, "arch", info.Arch, "runtime_cookie", info.Cookie, "command_line", cmd)
	}
	set, _ := dotnet.ReadSettings(pid, rd.Version, env)
	addSettings(rd, &set, st)
	return rd, note, nil
}

// maxCommandLine bounds the command line kept of ProcessInfo.
const maxCommandLine = 512

// dotnetIPC asks the runtime for ProcessInfo and for its GC variables
// (ProcessEnvironment: only those are kept), each within 2 s; note says
// what it did not answer.
func dotnetIPC(pid int) (*dotnet.ProcessInfo, map[string]string, string) {
	ep, err := dotnet.Find(pid)
	if err != nil {
		return nil, nil, ""
	}
	defer func() { _ = ep.Close() }()
	ctx := context.Background()
	var unknown, failed []string
	info, err := dotnet.GetProcessInfo(ctx, ep.Dial, 2*time.Second)
	switch {
	case errors.Is(err, dotnet.ErrUnsupported):
		unknown = append(unknown, "ProcessInfo")
	case err != nil:
		failed = append(failed, err.Error())
	}
	env, err := dotnet.GetEnvironment(ctx, ep.Dial, 2*time.Second, dotnet.EnvNames())
	switch {
	case errors.Is(err, dotnet.ErrUnsupported):
		unknown = append(unknown, "ProcessEnvironment")
	case err != nil:
		failed = append(failed, err.Error())
	}
	var notes []string
	if len(unknown) > 0 {
		notes = append(notes, "the runtime answers unknown command to "+strings.Join(unknown, " and ")+" (.NET 5 and later answer them): its GC variables were read from its initial environment, its command line, OS, architecture and instance cookie are not shown")
	}
	return info, env, strings.Join(append(notes, failed...), "; ")
}

// addCounters adds what the System.Runtime counters say and the GC
// events did not: when no collection ran in the window, the heap after
// the latest collection (the generations' sizes, gen0-2, LOH and POH)
// and the LOH, or the heap in use before any collection, the bytes allocated over the window (alloc-rate's increments,
// small and large objects) and, from .NET 6, the heap committed
// (gc-committed). time-in-gc is not used: it is the share of the time
// between the last two collections, where the pauses read give the
// window's own.
func addCounters(rd *Reading, st *dotnet.GCStats, cn *dotnet.Counters) {
	if cn == nil || cn.Reports == 0 {
		return
	}
	if !st.HeapSeen {
		// The generations' sizes are those after the latest collection,
		// all 0 before the first: then the heap in use (gc-heap-size, in
		// whole MB on 3.1).
		var live float64
		for _, n := range []string{"gen-0-size", "gen-1-size", "gen-2-size", "loh-size", "poh-size"} {
			v, _ := cn.Get(n)
			live += v
		}
		if live > 0 {
			rd.add(HeapLive, live)
			if v, ok := cn.Get("loh-size"); ok {
				rd.add(LargeObjects, v)
			}
		} else if v, ok := cn.Get("gc-heap-size"); ok {
			rd.add(HeapLive, v)
		}
	}
	if v, ok := cn.Sum["alloc-rate"]; ok {
		rd.add(Allocated, v)
	}
	if v, ok := cn.Get("gc-committed"); ok {
		rd.add(HeapCommitted, v)
	}
}

// addSettings adds the GC settings in force: those set (variables, the
// runtimeconfig.json) and what the events show (the heaps, the latency
// mode). A Server GC with more than one heap is Server GC whatever was
// found set.
func addSettings(rd *Reading, set *dotnet.Settings, st *dotnet.GCStats) {
	var l []string
	from := set.Sources()
	if v, ok := set.Bool(dotnet.SetServer); ok {
		l = append(l, "gc", map[bool]string{true: "server", false: "workstation"}[v])
	} else if st != nil && st.Heaps > 1 {
		l = append(l, "gc", "server")
	}
	if v, ok := set.Bool(dotnet.SetConcurrent); ok {
		l = append(l, "concurrent", strconv.FormatBool(v))
	}
	if st != nil && (st.Heaps > 0 || st.LatencyMode != "") {
		from = append(from, "events")
		if st.Heaps > 0 {
			l = append(l, "heaps", strconv.Itoa(st.Heaps))
		}
		if st.LatencyMode != "" {
			l = append(l, "latency_mode", st.LatencyMode)
		}
	} else if v, ok := set.Values[dotnet.SetHeapCount]; ok {
		l = append(l, "heaps", strconv.FormatUint(v.Value, 10))
	}
	for _, k := range []string{dotnet.SetHeapHardLimitPct, dotnet.SetGen0Size, dotnet.SetDynamicAdapt} {
		if v, ok := set.Values[k]; ok {
			l = append(l, k, strconv.FormatUint(v.Value, 10))
		}
	}
	if v, ok := set.Values[dotnet.SetHeapHardLimit]; ok && v.Value > 0 {
		rd.add(HeapLimit, float64(v.Value))
	}
	if len(l) == 0 {
		return
	}
	rd.add(GCSettingsInfo, 1, append(l, "from", strings.Join(from, ","))...)
}

func inducedCauses(st *dotnet.GCStats) []string {
	out := make([]string, 0, len(st.InducedBy))
	for c := range st.InducedBy {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
