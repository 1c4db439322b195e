package malloc

// With memdoctor's preload library in the process (built here from
// preload/src, as its Makefile does), Inspect and Trim ask the library and
// never stop the process.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/preload"
)

func buildPreload(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "preload", "src")
	if _, err := os.Stat(filepath.Join(src, "preload.c")); err != nil {
		t.Skip("preload/src not in this tree")
	}
	build(t, false) // gcc present, build dir made
	lib := filepath.Join(buildDir, "libmemdoctor_preload.so")
	if _, err := os.Stat(lib); err == nil {
		return lib
	}
	files, _ := filepath.Glob(filepath.Join(src, "*.c"))
	args := append(append(append([]string{}, preload.CFLAGS...), preload.LDFLAGS...), "-o", lib)
	args = append(append(args, files...), preload.LDLIBS...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("building the preload library: %v\n%s", err, out)
	}
	return lib
}

// watchStopped counts the times any thread of pid is seen stopped or traced.
func watchStopped(pid int) (stop func() int64) {
	var seen atomic.Int64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if st, err := taskStates(pid); err == nil {
				for _, s := range st {
					if s == 't' || s == 'T' {
						seen.Add(1)
					}
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return func() int64 { close(done); return seen.Load() }
}

func TestPreloadNoPause(t *testing.T) {
	lib := buildPreload(t)
	dir := t.TempDir()
	w := startWorkload(t, false, []string{"LD_PRELOAD=" + lib, "MEMDOCTOR_STATS=" + filepath.Join(dir, "stats.%p")}, "hoard", "4", "32")
	ctx := context.Background()
	stop := watchStopped(w.pid)
	rep, err := Inspect(ctx, w.pid, Options{})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	tr, err := Trim(ctx, w.pid, Options{})
	if n := stop(); n != 0 {
		t.Errorf("the process was seen stopped %d times", n)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Source != "preload" || rep.Pause != nil || tr.Source != "preload" || tr.Pause != nil {
		t.Errorf("inspect source %s pause %v, trim source %s pause %v: want the library, no pause", rep.Source, rep.Pause, tr.Source, tr.Pause)
	}
	t.Logf("preload: %d arenas, retained %d, answered in %.0f ms; trim %+v in %.1f ms",
		rep.Totals.ArenaCount, rep.Totals.RetainedBytes, rep.PreloadMs, tr.RSS, tr.ElapsedMs)
	// Main, 4 workers, and the library's thread once it allocated.
	if n := rep.Totals.ArenaCount; n != 5 && n != 6 {
		t.Errorf("%d arenas, want 5 or 6", n)
	}
	if float64(tr.RSS.Diff) < 0.9*float64(rep.Totals.RetainedBytes) {
		t.Errorf("trim freed %d, retained was %d", tr.RSS.Diff, rep.Totals.RetainedBytes)
	}
	checkRunning(t, w.pid)
	w.do("more")
	// Called into, the same process gives the same picture.
	requirePtrace(t)
	g, err := Inspect(ctx, w.pid, Options{Method: MethodPtrace})
	skipIfPtraceDenied(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if g.Source != "ptrace" || g.Totals.ArenaCount != rep.Totals.ArenaCount {
		t.Errorf("ptrace: source %s, %d arenas", g.Source, g.Totals.ArenaCount)
	}
}
