package malloc

// Trim: malloc_trim(0) inside a running process, and what it would give.
//
// malloc_trim(0) (glibc 2.8+) walks every arena and madvise(MADV_DONTNEED)s
// the whole pages inside free chunks, then shrinks the main heap's top. It
// changes no allocator statistic (system_mem, fordblks stay), only RSS: so
// the result is measured as RSS before and after, from /proc/PID/status
// (VMRSS, RssAnon) and smaps_rollup (Pss_Anon).
//
// The estimate for a dry run, by what the user allows:
//
//	preload  the library's malloc_info dump: retained_bytes, no pause
//	ptrace   malloc_info called in the process: retained_bytes, one thread
//	         held for milliseconds
//	smaps    --no-pause without the library: no allocator state at all, only
//	         an upper bound, the resident anonymous memory of the malloc heaps
//	         ([heap] and the 64 MiB-aligned arena heaps) in /proc/PID/smaps;
//	         free and used memory are indistinguishable from outside.
//
// The expected gain is min(retained_bytes, RssAnon): malloc_info cannot see
// whether a free page is resident (an earlier trim, or a page never
// touched, counts as retained), while RssAnon can only fall to zero.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Change is a value before and after, and Diff = before − after (positive
// when memory was given back), as in incident 5's trimmer log and in the
// preload library's trim lines.
type Change struct {
	Before int64 `json:"before"`
	After  int64 `json:"after"`
	Diff   int64 `json:"diff"`
}

func change(before, after int64) Change {
	return Change{Before: before, After: after, Diff: before - after}
}

// TrimResult is the outcome of malloc_trim(0) in a process. The first two
// keys are those of incident 5's trimmer log: {"elapsedMs":..,"rss":{..}}.
type TrimResult struct {
	// ElapsedMs is the wall time of the malloc_trim call.
	ElapsedMs float64 `json:"elapsedMs"`
	// RSS is VMRSS in bytes; Diff is before − after.
	RSS Change `json:"rss"`
	// RssAnon is the anonymous part of RSS, in bytes.
	RssAnon Change `json:"rssAnon"`
	// PssAnon is Pss_Anon from smaps_rollup, in bytes (4.14+ kernels),
	// read before attaching and after detaching.
	PssAnon *Change `json:"pssAnon,omitempty"`
	// Released is malloc_trim's return value: 1 when memory was released
	// (ptrace only).
	Released *int `json:"released,omitempty"`
	PID      int  `json:"pid"`
	// Source is "ptrace" or "preload" (the library trimmed: no pause).
	Source string `json:"source"`
	// GlibcVersion is the version of the process' libc.so.6.
	GlibcVersion string `json:"glibcVersion,omitempty"`
	// PausedMs is how long the calling thread was held outside calls.
	PausedMs float64 `json:"pausedMs"`
	// Pause details the hold.
	Pause *Pause `json:"pause,omitempty"`
	// Allocator is the allocator treated: glibc (malloc_trim), jemalloc
	// (arena.<all>.purge) or tcmalloc (ReleaseFreeMemory); Call is the
	// call made.
	Allocator string `json:"allocator"`
	Call      string `json:"call,omitempty"`
	// Notes are facts worth knowing about the process.
	Notes []string `json:"notes,omitempty"`
}

// Trim calls malloc_trim(0) in process pid and measures RSS before and
// after: through memdoctor's preload library when the process runs it with
// MEMDOCTOR_STATS (no pause; Method auto or preload), else by calling it in
// one thread of the process (held for the trim plus about a millisecond;
// the other threads run). The process is never left stopped.
func Trim(ctx context.Context, pid int, opt Options) (*TrimResult, error) {
	opt = opt.withDefaults()
	t, err := inspectTarget(pid)
	if err != nil {
		return nil, err
	}
	res := &TrimResult{PID: pid, GlibcVersion: t.glibc, Allocator: "glibc", Call: "malloc_trim(0)", Notes: t.notes()}
	if t.server.Name != "" {
		return res, trimNative(ctx, t, opt, res)
	}
	usePreload, note, err := choosePreload(t, opt)
	if err != nil {
		return nil, err
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	if usePreload {
		return res, trimPreload(ctx, t, opt, res)
	}
	if err := t.checkAttach(); err != nil {
		return nil, err
	}
	res.Source = "ptrace"
	// Pss_Anon walks the page tables (milliseconds per GB): read it
	// before attaching and after detaching, not while the thread is
	// held. VMRSS and RssAnon are counters, read around the call.
	pssBefore, _ := readMemory(pid, true)
	var before, after processMemory
	var rc uint64
	pause, err := withSession(ctx, t, opt, func(s *session) error {
		var err error
		if before, err = readMemory(pid, false); err != nil {
			return err
		}
		rc, err = s.call(ctx, "malloc_trim", 0)
		if err != nil {
			return err
		}
		after, err = readMemory(pid, false)
		return err
	})
	pssAfter, _ := readMemory(pid, true)
	before.PssAnon, after.PssAnon = pssBefore.PssAnon, pssAfter.PssAnon
	res.Pause = pause
	if pause != nil {
		res.PausedMs = pause.StoppedMs
		for _, c := range pause.Calls {
			if c.Function == "malloc_trim" {
				res.ElapsedMs = c.Ms
			}
		}
	}
	if err != nil {
		return res, err
	}
	released := int(int32(uint32(rc)))
	res.Released = &released
	res.setMemory(before, after)
	return res, nil
}

func (res *TrimResult) setMemory(before, after processMemory) {
	res.RSS = change(before.VMRSS, after.VMRSS)
	res.RssAnon = change(before.RssAnon, after.RssAnon)
	if before.PssAnon != nil && after.PssAnon != nil {
		c := change(*before.PssAnon, *after.PssAnon)
		res.PssAnon = &c
	}
}

// trimPreload asks the preload library to trim. Its answer carries the
// trim's own duration and VMRSS around it, measured inside the process;
// RssAnon and Pss_Anon are read from outside, around the request (the
// process runs meanwhile).
func trimPreload(ctx context.Context, t *target, opt Options, res *TrimResult) error {
	res.Source = "preload"
	before, err := readMemory(t.pid, true)
	if err != nil {
		return err
	}
	ans, err := askPreload(ctx, t, opt, "trim", false)
	if err != nil {
		return err
	}
	after, err := readMemory(t.pid, true)
	if err != nil {
		return err
	}
	res.setMemory(before, after)
	ev := ans.Event
	res.ElapsedMs = ev.ElapsedMs
	if ev.RSS.Measured {
		res.RSS = change(ev.RSS.Before, ev.RSS.After)
	}
	return nil
}

// TrimEstimate is a dry run of Trim.
type TrimEstimate struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
	// Source is "preload", "ptrace" or "smaps" (see the package notes).
	Source string `json:"source"`
	// RetainedBytes is Totals.RetainedBytes of malloc_info (preload,
	// ptrace).
	RetainedBytes *int64 `json:"retained_bytes,omitempty"`
	// ExpectedGainBytes is min(RetainedBytes, RssAnon) (preload, ptrace).
	ExpectedGainBytes *int64 `json:"expected_gain_bytes,omitempty"`
	// UpperBoundBytes is the resident memory of the malloc heaps (smaps):
	// the gain is at most this.
	UpperBoundBytes *int64 `json:"upper_bound_bytes,omitempty"`
	// Process is the process' memory now.
	Process processMemory `json:"process"`
	// Report is the inspection the estimate came from (preload, ptrace).
	Report *Report `json:"report,omitempty"`
	// Apply is how --apply would reach the allocator: "preload" (the
	// library trims, no pause) or "ptrace" (a call in one thread).
	Apply string `json:"apply"`
	// Steps is what --apply does, in order.
	Steps []string `json:"steps"`
	// Allocator is the allocator that serves malloc and Call what
	// --apply calls in it (see TrimResult).
	Allocator string `json:"allocator"`
	Call      string `json:"call"`
	// Nothing says why --apply has nothing to offer, when it has not.
	Nothing string   `json:"nothing_to_offer,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Estimate says what Trim would do and give, without trimming. With
// noPause and no preload library, it reads only /proc (an upper bound).
func Estimate(ctx context.Context, pid int, opt Options, noPause bool) (*TrimEstimate, error) {
	opt = opt.withDefaults()
	t, err := inspectTarget(pid)
	if err != nil {
		return nil, err
	}
	est := &TrimEstimate{PID: pid, Comm: t.comm, Allocator: "glibc", Call: "malloc_trim(0)", Notes: t.notes(), Apply: "ptrace", Steps: TrimSteps(pid)}
	if err := t.checkAttach(); err != nil {
		est.Notes = append(est.Notes, "--apply will refuse: "+err.Error())
	}
	if t.server.Name != "" {
		return est, estimateNative(ctx, t, opt, noPause, est)
	}
	usePreload, _, perr := choosePreload(t, opt)
	switch {
	case noPause:
		// /proc only: no call, and no request to a preload library either.
		ub, err := heapResident(pid)
		if err != nil {
			return nil, err
		}
		est.Source, est.UpperBoundBytes = "smaps", &ub
		est.Process, _ = readMemory(pid, false)
		est.Notes = append(est.Notes, "--no-pause: without asking the process (its preload library or a call into it) malloc's free and used memory cannot be told apart; this is the resident memory of its malloc heaps, an upper bound of the gain")
		if perr == nil && usePreload {
			est.Notes = append(est.Notes, "the process runs the preload library: without --no-pause it is asked for malloc_info (it answers from its own thread, no pause) and the estimate is exact")
			est.Apply, est.Steps = "preload", preloadTrimSteps(t.statsPath)
		}
		return est, nil
	case perr == nil && usePreload:
		opt.Method = MethodPreload
		est.Apply, est.Steps = "preload", preloadTrimSteps(t.statsPath)
	default:
		opt.Method = MethodPtrace
	}
	rep, err := Inspect(ctx, pid, opt)
	if err != nil {
		return nil, err
	}
	est.Source, est.Report, est.Process = rep.Source, rep, rep.Process
	r := rep.Totals.RetainedBytes
	g := min(r, rep.Process.RssAnon)
	est.RetainedBytes, est.ExpectedGainBytes = &r, &g
	return est, nil
}

// preloadTrimSteps says what Trim does through the preload library.
func preloadTrimSteps(stats string) []string {
	return []string{
		fmt.Sprintf("write \"trim ID\" to %s.request (a temporary file renamed into place, as the process' user)", stats),
		fmt.Sprintf("wait for the library's answer line in %s (it looks every second); it calls malloc_trim(0) itself: no pause", stats),
	}
}

// TrimSteps says what Trim does in the process, in order.
func TrimSteps(pid int) []string {
	return []string{
		"once per run: try the same steps on a throwaway child of memdoctor's own, and stop if it does not come out intact",
		fmt.Sprintf("find malloc_trim and __errno_location in pid %d's own libc.so.6 (its dynamic symbols)", pid),
		fmt.Sprintf("choose one thread of pid %d blocked in a system call the allocator never makes; seize and stop only that thread (PTRACE_SEIZE, PTRACE_INTERRUPT): the others keep running", pid),
		"save its registers, its whole extended (vector) state and its signal mask; hold signals pending during the calls",
		"save errno; call malloc_trim(0) on that thread; write errno back",
		"restore registers, extended state and signal mask exactly; detach: an interrupted system call is restarted by the kernel",
	}
}

// heapResident sums Rss of the malloc heaps in /proc/PID/smaps: the main
// [heap] and the 64 MiB-aligned anonymous arena heaps.
func heapResident(pid int) (int64, error) {
	f, err := os.Open(procPath(pid, "smaps"))
	if err != nil {
		if os.IsNotExist(err) {
			return 0, fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
		}
		return 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	const heapMax = 64 << 20
	const goHeap = 0xc000000000 // the Go runtime's first arena (cgo programs): not malloc's
	var (
		total  int64
		inHeap bool
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if isMappingLine(line) {
			f := strings.Fields(string(line))
			lo, hi, _ := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil {
				inHeap = false
				continue
			}
			anon := len(f) < 6
			inHeap = len(f) >= 6 && f[5] == "[heap]" ||
				anon && f[1] == "rw-p" && start%heapMax == 0 && end-start <= heapMax && start != goHeap
			continue
		}
		if inHeap && bytes.HasPrefix(line, []byte("Rss:")) {
			v := strings.Fields(string(line[4:]))
			if len(v) >= 1 {
				if kb, err := strconv.ParseInt(v[0], 10, 64); err == nil {
					total += kb << 10
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading /proc/%d/smaps: %w", pid, err)
	}
	return total, nil
}

// isMappingLine reports whether an smaps line starts a mapping
// ("559aede6b000-559aede9a000 r--p ...") rather than a "Key: value" line.
func isMappingLine(l []byte) bool {
	i := bytes.IndexByte(l, ' ')
	if i <= 0 {
		return false
	}
	return bytes.IndexByte(l[:i], '-') > 0 && l[i-1] != ':'
}
