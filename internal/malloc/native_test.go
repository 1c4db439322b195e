package malloc

// Integration tests on real processes: the workload, built here, inspected
// and trimmed by calling into it. They skip when gcc is missing or ptrace
// is not permitted.

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/inject"
)

// within reports |got − want| ≤ frac·want + abs.
func within(got, want int64, frac float64, abs int64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= int64(frac*float64(want))+abs
}

func TestInspectAgreesWithMallinfo2(t *testing.T) {
	requirePtrace(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"hoard", []string{"hoard", "8", "64"}},
		{"leak", []string{"leak", "8", "16", "2"}},
		{"healthy", []string{"healthy", "8", "2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := startWorkload(t, false, nil, c.args...)
			own := w.do("info") // the process' own mallinfo2, just before
			rep, err := Inspect(context.Background(), w.pid, Options{Mallinfo2: true})
			skipIfPtraceDenied(t, err)
			if err != nil {
				t.Fatal(err)
			}
			checkRunning(t, w.pid)
			if rep.Process.VMRSS < own.RSSKB<<10/2 || rep.Process.RssAnon <= 0 {
				t.Errorf("process memory %+v, the workload says VmRSS %d kB", rep.Process, own.RSSKB)
			}
			ownAfter := w.do("info")
			tot := rep.Totals
			t.Logf("%s: malloc_info system %d free %d in use %d mmap %d retained %d arenas %d chunks %d",
				c.name, tot.SystemBytes, tot.FreeBytes, tot.InUseBytes, tot.MmapBytes, tot.RetainedBytes, tot.ArenaCount, tot.FreeChunks)
			t.Logf("%s: own mallinfo2 arena %d fordblks %d uordblks %d hblkhd %d keepcost %d (after: %d %d %d)",
				c.name, own.Arena, own.Fordblks, own.Uordblks, own.Hblkhd, own.Keepcost, ownAfter.Arena, ownAfter.Fordblks, ownAfter.Uordblks)
			if rep.Pause != nil {
				t.Logf("%s: stopped %.1f ms, attached %.1f ms, calls %.1f ms, %d threads", c.name,
					rep.Pause.StoppedMs, rep.Pause.AttachedMs, rep.Pause.CallsMs, rep.Pause.Threads)
			}
			// Against the workload's own mallinfo2(), read a moment
			// earlier: the same arenas, a few KiB apart (stdio buffers:
			// our fmemopen FILE is in use while malloc_info runs, the
			// workload's stdout buffer was allocated after its first
			// snapshot).
			const slack = 64 << 10
			if !within(tot.SystemBytes, own.Arena, 0.01, slack) {
				t.Errorf("system_bytes %d, workload's arena %d", tot.SystemBytes, own.Arena)
			}
			if !within(tot.FreeBytes, own.Fordblks, 0.01, slack) {
				t.Errorf("free_bytes %d, workload's fordblks %d", tot.FreeBytes, own.Fordblks)
			}
			if !within(tot.InUseBytes, own.Uordblks, 0.01, slack) {
				t.Errorf("in_use_bytes %d, workload's uordblks %d", tot.InUseBytes, own.Uordblks)
			}
			if tot.MmapBytes != own.Hblkhd {
				t.Errorf("mmap_bytes %d, workload's hblkhd %d", tot.MmapBytes, own.Hblkhd)
			}
			if tot.ArenaCount != 9 {
				t.Errorf("%d arenas, want 9 (main + one per thread)", tot.ArenaCount)
			}
			// Against mallinfo2() called by memdoctor right after
			// malloc_info, in the same stop: exact, up to malloc_info's
			// one byte per binned chunk (it sums raw size fields).
			mi := rep.Mallinfo2
			if mi == nil {
				t.Fatal("no mallinfo2 (x86-64, glibc 2.36: expected)")
			}
			binned := tot.FreeChunks - int64(tot.ArenaCount) // minus one top chunk per arena
			if int64(mi.Arena) != tot.SystemBytes || int64(mi.Fordblks) != tot.FreeBytes-binned ||
				int64(mi.Uordblks) != tot.InUseBytes+binned || int64(mi.Hblkhd) != tot.MmapBytes ||
				int64(mi.Keepcost) != rep.Arenas[0].TopBytes || int64(mi.Ordblks+mi.Smblks) != tot.FreeChunks {
				t.Errorf("mallinfo2 %+v disagrees with malloc_info totals %+v (main top %d)", *mi, tot, rep.Arenas[0].TopBytes)
			}
		})
	}
}

func TestTrimGivesBackRetained(t *testing.T) {
	requirePtrace(t)
	w := startWorkload(t, false, nil, "hoard", "8", "64")
	rep, err := Inspect(context.Background(), w.pid, Options{})
	skipIfPtraceDenied(t, err)
	if err != nil {
		t.Fatal(err)
	}
	retained := rep.Totals.RetainedBytes
	tr, err := Trim(context.Background(), w.pid, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkRunning(t, w.pid)
	t.Logf("retained %d; trim: rss %+v in %.1f ms (stopped %.1f ms); inspect stopped %.1f ms",
		retained, tr.RSS, tr.ElapsedMs, tr.PausedMs, rep.Pause.StoppedMs)
	if float64(tr.RSS.Diff) < 0.9*float64(retained) {
		t.Errorf("trim freed %d bytes, < 90%% of the %d retained", tr.RSS.Diff, retained)
	}
	if tr.Released == nil || *tr.Released != 1 || tr.RSS.Diff != tr.RSS.Before-tr.RSS.After || tr.ElapsedMs <= 0 || tr.Source != "ptrace" {
		t.Errorf("result %+v", tr)
	}
	// malloc_info cannot see residency: right after the trim the same
	// free chunks are "retained" again, while a second trim gives little.
	rep2, err := Inspect(context.Background(), w.pid, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr2, err := Trim(context.Background(), w.pid, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the trim: retained %d again, a second trim freed %d", rep2.Totals.RetainedBytes, tr2.RSS.Diff)
	if tr2.RSS.Diff > retained/20 {
		t.Errorf("second trim freed %d, expected next to nothing", tr2.RSS.Diff)
	}
	// The process goes on: it answers and allocates again.
	info := w.do("info")
	if info.RSSKB*1024 > tr.RSS.After+(8<<20) {
		t.Errorf("workload's own RSS %d kB after the trim, memdoctor measured %d bytes", info.RSSKB, tr.RSS.After)
	}
	more := w.do("more")
	if more.Ops <= info.Ops {
		t.Errorf("ops %d after \"more\", %d before: the threads did not run", more.Ops, info.Ops)
	}
	checkRunning(t, w.pid)
}

// The process is never left stopped, whenever the timeout expires:
// timeouts swept across a whole inspection, so that some expire before the
// thread is held, some while it is being stopped, some between calls.
func TestTimeoutNeverLeavesProcessStopped(t *testing.T) {
	requirePtrace(t)
	w := startWorkload(t, false, nil, "hoard", "64", "1")
	_, err := Inspect(context.Background(), w.pid, Options{}) // runs the canary once
	skipIfPtraceDenied(t, err)
	if err != nil {
		t.Fatal(err)
	}
	// The sweep is laid over how long an inspection takes now; one slow
	// measurement (a busy host) would put every timeout past the calls, so
	// the duration is the fastest of three, and a sweep that never fell
	// between calls is made again on a new measurement.
	const steps = 40
	phases := map[string]int{}
	var full time.Duration
	for round := 0; round < 4 && phases["between calls"] == 0; round++ {
		full = 0
		for i := 0; i < 3; i++ {
			start := time.Now()
			if _, err := Inspect(context.Background(), w.pid, Options{}); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); full == 0 || d < full {
				full = d
			}
		}
		for i := 0; i < steps; i++ {
			d := full * time.Duration(i+1) / steps // 2.5% .. 100%
			_, err := Inspect(context.Background(), w.pid, Options{Timeout: d})
			switch {
			case err == nil:
				phases["finished"]++
			case errors.Is(err, ErrTimeout):
				switch {
				case strings.Contains(err.Error(), "before attaching"):
					phases["before attaching"]++
				case strings.Contains(err.Error(), "while attaching"):
					phases["attaching"]++
				case strings.Contains(err.Error(), "between calls"):
					phases["between calls"]++
				default:
					phases["other"]++
				}
			default:
				t.Fatalf("timeout %s: %v", d, err)
			}
			checkRunning(t, w.pid)
			w.do("info")
		}
	}
	t.Logf("full inspection %s; outcomes over %d timeouts: %v", full, steps, phases)
	if phases["between calls"] == 0 {
		t.Errorf("no timeout fell between calls: the cleanup path was not exercised (%v)", phases)
	}
}

// A call that waits on a lock past the timeout is interrupted, and the
// thread put back: a self-deadlock built on purpose (a mutex locked twice
// by the calling thread).
func TestTimeoutInterruptsCallWaitingOnLock(t *testing.T) {
	requirePtrace(t)
	w := startWorkload(t, false, nil, "healthy", "2", "1")
	tg, err := inspectTarget(w.pid)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var second error
	start := time.Now()
	_, err = withSession(ctx, tg, Options{Timeout: 2 * time.Second, CallGrace: time.Minute}.withDefaults(), func(s *session) error {
		extra, err := inject.Resolve(tg.pid, tg.maps, "pthread_mutex_lock")
		if err != nil {
			return err
		}
		s.fn["pthread_mutex_lock"] = extra["pthread_mutex_lock"]
		buf, err := s.call(ctx, "mmap", 0, 65536, 3, 0x22, ^uint64(0), 0)
		if err != nil {
			return err
		}
		if _, err := s.call(ctx, "pthread_mutex_lock", buf); err != nil {
			return err
		}
		_, second = s.call(ctx, "pthread_mutex_lock", buf) // never returns by itself
		s.in.WindDown()
		_, err = s.call(ctx, "munmap", buf, 65536)
		return err
	})
	skipIfPtraceDenied(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(second, ErrTimeout) {
		t.Fatalf("second lock: %v, want a timeout", second)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s with a 2 s timeout", el)
	}
	t.Logf("second lock: %v", second)
	checkRunning(t, w.pid)
	w.do("more")
}

// A busy call is never interrupted (that could leave an allocator lock
// held): past Timeout + CallGrace the operator is told, and the call is
// waited for; the process goes on afterwards.
func TestBusyCallIsWaitedFor(t *testing.T) {
	requirePtrace(t)
	w := startWorkload(t, false, nil, "healthy", "2", "1")
	tg, err := inspectTarget(w.pid)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var told []string
	start := time.Now()
	var ret uint64
	opt := Options{Timeout: 300 * time.Millisecond, CallGrace: 300 * time.Millisecond, OnStuck: func(m string) { told = append(told, m) }}.withDefaults()
	_, err = withSession(ctx, tg, opt, func(s *session) error {
		extra, err := inject.Resolve(tg.pid, tg.maps, "sleep")
		if err != nil {
			return err
		}
		s.fn["sleep"] = extra["sleep"]
		ret, err = s.call(ctx, "sleep", 2) // clock_nanosleep: not a lock
		return err
	})
	skipIfPtraceDenied(t, err)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	if ret != 0 || el < 2*time.Second {
		t.Errorf("sleep(2) returned %d after %s: it was cut short", ret, el)
	}
	if len(told) != 1 || !strings.Contains(told[0], "busy") {
		t.Errorf("operator told %q, want one message about a busy call", told)
	}
	t.Logf("after %s: %v", el, told)
	checkRunning(t, w.pid)
	w.do("more")
}

func TestRefusals(t *testing.T) {
	requirePtrace(t)
	ctx := context.Background()
	check := func(name string, err, want error, words ...string) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: err %v, want %v", name, err, want)
			return
		}
		for _, w := range words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", name, err, w)
			}
		}
	}
	_, err := Inspect(ctx, 1, Options{})
	check("pid 1", err, ErrPID1)
	_, err = Trim(ctx, 1, Options{})
	check("trim pid 1", err, ErrPID1)

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	_, err = Inspect(ctx, gone.Process.Pid, Options{})
	check("exited", err, ErrProcessGone)

	static := startWorkload(t, true, nil, "healthy", "1", "1")
	_, err = Inspect(ctx, static.pid, Options{})
	check("static", err, ErrNotGlibc, "libc.so.6", "statically linked")
	_, err = Trim(ctx, static.pid, Options{})
	check("trim static", err, ErrNotGlibc)

	w := startWorkload(t, false, nil, "healthy", "1", "1")
	if err := syscall.Kill(w.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, w.pid, 'T')
	_, err = Inspect(ctx, w.pid, Options{})
	check("stopped", err, ErrStopped, "kill -CONT")
	if st, _ := taskStates(w.pid); st[w.pid] != 'T' {
		t.Errorf("a refused stopped process must stay stopped, state %c", st[w.pid])
	}
	_ = syscall.Kill(w.pid, syscall.SIGCONT)
	waitState(t, w.pid, 'S')
	w.do("info")
}

func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if st, _ := taskStates(pid); st[pid] == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d never reached state %c", pid, want)
}
