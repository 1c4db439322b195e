// Package leaktrace samples the heap of a running process that was not
// started under the preload library: for a bounded time, uprobes on its
// libc allocation functions sample about one allocation per Rate bytes
// allocated (in the kernel, leaktrace.c), keep the sampled blocks with their
// user stacks, and forget them when freed. The result is a heapprof.Dump,
// scaled from the samples as the library scales its own, so the report and
// the pprof profile are the ones of the library's profile.
//
// Only what is allocated while the probes are attached is seen: the bytes
// in use are those allocated in the window and not freed by its end.
package leaktrace

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/heapprof"
	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/safeio"
)

// ErrUnavailable is returned when the probes cannot be loaded or attached
// here (not root, no BPF or uprobes, a locked-down kernel, another
// architecture): its message says to use the preload library instead.
var ErrUnavailable = errors.New("eBPF heap sampling unavailable")

// Bounds on a trace.
const (
	MaxDuration       = 10 * time.Minute
	DefaultRate       = 512 << 10
	DefaultMaxSamples = 1_000_000
	// MaxLive is how many sampled blocks not yet freed are followed (the
	// kernel map's size; at 512 KiB, 32 GiB allocated and kept in the window).
	MaxLive = 65536
	// maxDepth is the frames kept per stack (leaktrace.c's MAX_DEPTH).
	maxDepth = 32
)

// fallback is what the errors of an unavailable trace end with.
const fallback = "start the process under the preload library with MEMDOCTOR_PROFILE=512KiB instead (memdoctor preload --print-path)"

// Options bound a trace.
type Options struct {
	PID      int
	Rate     uint64        // mean bytes between samples; 0: DefaultRate
	Duration time.Duration // how long the probes stay attached (at most MaxDuration)
	// MaxSamples ends the trace early once this many allocations were
	// sampled; 0: DefaultMaxSamples.
	MaxSamples uint64
	// Count is the count-only phase that measures the target's call rate
	// for the overhead estimate; 0: one second.
	Count time.Duration
	// Estimate, when set, is called with the overhead estimate before
	// sampling starts; an error from it ends the trace with no sampling.
	Estimate func(Estimate) error
	// Started, when set, is called once sampling is on.
	Started func()
}

// Estimate is what the probes are expected to cost, measured before
// sampling starts.
type Estimate struct {
	// ProbeHit is one probe hit on this host whose instruction the kernel
	// emulates (a push, as glibc's malloc begins with on amd64); ProbeStep
	// one whose instruction is stepped out of line (a second trap). Both
	// are timed on functions of memdoctor itself, with and without a
	// probe.
	ProbeHit  time.Duration `json:"probeHitNs"`
	ProbeStep time.Duration `json:"probeStepNs"`
	// Window is the count-only phase on the target.
	Window    time.Duration  `json:"windowNs"`
	Functions []FuncEstimate `json:"functions"`
	// CPUShare is the CPU the probes would take at the call rates of the
	// window, as a fraction of one CPU.
	CPUShare float64 `json:"cpuShare"`
	// The caps the trace enforces.
	Duration   time.Duration `json:"durationNs"`
	MaxSamples uint64        `json:"maxSamples"`
	MaxLive    int           `json:"maxLive"`
	Libc       string        `json:"libc"`
}

// FuncEstimate is one probed function: its calls in the window and the
// time its probes add to each: its entry, and for an allocation function
// its return, estimated as a stepped hit (the return trampoline traps,
// then the kernel restores the return address; measured by
// BenchmarkProbeCost to cost about that).
type FuncEstimate struct {
	Name    string        `json:"name"`
	Calls   uint64        `json:"calls"`
	Stepped bool          `json:"stepped"` // its first instruction is stepped out of line
	PerCall time.Duration `json:"perCallNs"`
}

// estimate fills in the per-call costs and the CPU share.
func (e *Estimate) estimate(returns map[string]bool) {
	var cost float64
	for i := range e.Functions {
		f := &e.Functions[i]
		f.PerCall = e.ProbeHit
		if f.Stepped {
			f.PerCall = e.ProbeStep
		}
		if returns[f.Name] {
			f.PerCall += e.ProbeStep
		}
		cost += float64(f.Calls) * float64(f.PerCall)
	}
	if e.Window > 0 {
		e.CPUShare = cost / float64(e.Window)
	}
}

// Text is the estimate in a few lines.
func (e Estimate) Text(w io.Writer) {
	_, _ = fmt.Fprintf(w, "eBPF sampling of %s: a probe hit costs %s here (%s when its instruction is stepped out of line).\n"+
		"  calls in %s of counting, and the time the probes would add to each:\n",
		e.Libc, e.ProbeHit, e.ProbeStep, e.Window.Round(time.Millisecond))
	for _, f := range e.Functions {
		rate := 0.0
		if e.Window > 0 {
			rate = float64(f.Calls) / e.Window.Seconds()
		}
		_, _ = fmt.Fprintf(w, "    %-15s %10.0f/s  +%s a call\n", f.Name, rate, f.PerCall)
	}
	_, _ = fmt.Fprintf(w, "  estimate: %.1f%% of a CPU at these rates.\n"+
		"  caps: %s, %d sampled allocations, %d sampled blocks followed; then the probes are removed.\n",
		100*e.CPUShare, e.Duration, e.MaxSamples, e.MaxLive)
}

// Result is a finished trace.
type Result struct {
	// Dump is the profile at the end; Base an empty one at the start
	// (everything in Dump was allocated in between: its in-use bytes are
	// the growth over the window).
	Dump, Base *heapprof.Dump
	Estimate   Estimate
	// Why the trace ended: "duration", "cancelled", "target exited",
	// "max samples".
	Ended string
	// Samples not fully kept.
	DroppedStack, DroppedEvent, Capped uint64
	pid                                int
}

// maxObject bounds a mapped file opened to name its functions.
const maxObject = 1 << 30

// Open opens the file behind one of the target's mappings (for
// symbolizing): through the process while it runs, else the path itself
// if it is still the file that was mapped.
func (r *Result) Open(m procfs.Mapping) (*os.File, error) {
	f, err := inject.OpenMapped(r.pid, m)
	if err == nil {
		return f, nil
	}
	g, info, gerr := safeio.OpenFile(strings.TrimSuffix(m.Path, " (deleted)"), maxObject)
	if gerr != nil {
		return nil, err
	}
	if info.Ino != m.Inode || fmt.Sprintf("%02x:%02x", unix.Major(info.Dev), unix.Minor(info.Dev)) != m.Dev {
		_ = g.Close()
		return nil, err
	}
	return g, nil
}

// check validates and fills in the options.
func (o *Options) check() error {
	if o.PID <= 0 {
		return fmt.Errorf("no process id")
	}
	if o.Duration <= 0 || o.Duration > MaxDuration {
		return fmt.Errorf("duration %s: want more than 0 and at most %s", o.Duration, MaxDuration)
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.MaxSamples == 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	if o.Count <= 0 {
		o.Count = time.Second
	}
	return nil
}

// findLibc is the C library process pid maps, as a path in its root.
func findLibc(pid int) (string, []procfs.Mapping, error) {
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		return "", nil, err
	}
	for _, m := range maps {
		base := path.Base(m.Path)
		if strings.HasPrefix(m.Path, "/") && (base == "libc.so.6" || strings.HasPrefix(base, "libc-2.")) {
			return m.Path, maps, nil
		}
	}
	return "", nil, fmt.Errorf("pid %d maps no glibc (libc.so.6): a static program or another C library has no libc functions to probe; %s", pid, fallback)
}

// scaled is what one sampled block of n bytes stands for: n/q bytes and
// 1/q blocks, q = 1-exp(-n/rate) its chance to be sampled (as the
// library scales, preload/src/profile.c).
func scaled(n, rate uint64) (objects, bytes float64) {
	q := 1.0
	if n > 0 {
		q = -math.Expm1(-float64(n) / float64(rate))
	}
	if q <= 0 {
		q = 1
	}
	return 1 / q, float64(n) / q
}

// acc sums the scaled samples of one stack.
type acc struct {
	allocN, allocB, inuseN, inuseB float64
}

// buildDump turns the samples into a dump: the bytes allocated per stack
// (every sampled allocation) and the bytes in use (the sampled blocks not
// freed), scaled.
func buildDump(pid int, rate uint64, at time.Time, samples uint64, droppedLive uint64,
	allocs []sampleRec, live []sampleRec, stack func(int64) []uint64, maps []procfs.Mapping) *heapprof.Dump {
	per := map[int64]*acc{}
	get := func(id int64) *acc {
		if id < 0 {
			id = -1
		}
		a := per[id]
		if a == nil {
			a = &acc{}
			per[id] = a
		}
		return a
	}
	for _, s := range allocs {
		n, b := scaled(s.size, rate)
		a := get(s.stack)
		a.allocN += n
		a.allocB += b
	}
	for _, s := range live {
		n, b := scaled(s.size, rate)
		a := get(s.stack)
		a.inuseN += n
		a.inuseB += b
		// A block sampled before its event was read (the ring full) still
		// counts as allocated.
		a.allocN = max(a.allocN, a.inuseN)
		a.allocB = max(a.allocB, a.inuseB)
	}
	d := &heapprof.Dump{PID: pid, Rate: rate, Time: at, Samples: samples, Live: uint64(len(live)), Dropped: droppedLive, Maps: maps}
	ids := make([]int64, 0, len(per))
	for id := range per {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := per[id]
		st := heapprof.Stack{AllocObjects: round(a.allocN), AllocBytes: round(a.allocB),
			InUseObjects: round(a.inuseN), InUseBytes: round(a.inuseB)}
		if id >= 0 {
			st.PCs = stack(id)
		}
		d.Stacks = append(d.Stacks, st)
	}
	return d
}

func round(f float64) int64 { return int64(math.Round(f)) }

// sampleRec is one sampled allocation: its size and stack id (< 0: none).
type sampleRec struct {
	size  uint64
	stack int64
}

// trimStack drops the zero frames after the stack's end.
func trimStack(pcs []uint64) []uint64 {
	for i, pc := range pcs {
		if pc == 0 {
			return pcs[:i]
		}
	}
	return pcs
}

// alive says whether the process behind pidfd still runs.
func alive(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n == 0
}

// ParseRate reads a sampling rate: bytes, or a number with a unit (k, KiB,
// m, MiB; binary multiples), as MEMDOCTOR_PROFILE takes it.
func ParseRate(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	mult := uint64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"k", 1 << 10}, {"m", 1 << 20}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			t, mult = t[:len(t)-len(u.suffix)], u.mult
			break
		}
	}
	n, err := strconv.ParseUint(strings.TrimSpace(t), 10, 64)
	if err != nil || n == 0 || n > (1<<32)/mult {
		return 0, fmt.Errorf("rate %q: want bytes from 1 to 4GiB, such as 512KiB", s)
	}
	return n * mult, nil
}
