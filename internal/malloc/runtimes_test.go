package malloc

// Read and trimmed by calling into them: real runtimes whose freed memory
// stays in glibc malloc (testdata/programs/{python,ruby,java}/malloc_target*),
// single-threaded (the call runs on the main thread, blocked in read on
// stdin) and multi-threaded (the other threads wait on a futex and are never
// stopped). The numbers are checked against what each process says of
// itself: its own mallinfo2 (Python through ctypes, Ruby through Fiddle), or
// the bytes it freed (Java, through Unsafe.freeMemory).

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestRuntimesReadAndTrimmed(t *testing.T) {
	requirePtrace(t)
	progs := filepath.Join("..", "..", "testdata", "programs")
	for _, c := range []struct {
		name string
		bin  string
		args []string
	}{
		{"python-1-thread", "python3", []string{filepath.Join(progs, "python", "malloc_target.py"), "64", "0"}},
		{"python-3-threads", "python3", []string{filepath.Join(progs, "python", "malloc_target.py"), "32", "2"}},
		{"ruby-1-thread", "ruby", []string{filepath.Join(progs, "ruby", "malloc_target.rb"), "64", "0"}},
		{"ruby-3-threads", "ruby", []string{filepath.Join(progs, "ruby", "malloc_target.rb"), "32", "2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.bin); err != nil {
				t.Skipf("%s not installed (scripts/install-test-deps.sh)", c.bin)
			}
			w := startCmd(t, exec.Command(c.bin, c.args...))
			checkOwnMallinfo(t, w)
		})
	}
	t.Run("jvm", func(t *testing.T) {
		if _, err := exec.LookPath("javac"); err != nil {
			t.Skip("javac not installed (scripts/install-test-deps.sh)")
		}
		dir := t.TempDir()
		src := filepath.Join(progs, "java", "MallocTarget.java")
		if out, err := exec.Command("javac", "-d", dir, src).CombinedOutput(); err != nil {
			t.Fatalf("javac: %v\n%s", err, out)
		}
		w := startCmd(t, exec.Command("java", "-Xmx64m", "-XX:+UseSerialGC", "-cp", dir, "MallocTarget", "96"))
		ctx := context.Background()
		rep, err := Inspect(ctx, w.pid, Options{Method: MethodPtrace})
		skipIfPtraceDenied(t, err)
		if err != nil {
			t.Fatal(err)
		}
		tot := rep.Totals
		t.Logf("jvm: %d arenas, system %d, free %d, retained %d; the JVM freed %d and kept %d; thread %d (%s) of %d held %.2f ms",
			tot.ArenaCount, tot.SystemBytes, tot.FreeBytes, tot.RetainedBytes, w.ready.Freed, w.ready.Kept,
			rep.Pause.Thread, rep.Pause.Why, rep.Pause.Threads, rep.Pause.AttachedMs)
		if tot.ArenaCount < 2 || tot.FreeBytes < w.ready.Freed*9/10 || tot.RetainedBytes < w.ready.Freed*7/10 {
			t.Errorf("malloc_info does not show the %d bytes the JVM freed: %+v", w.ready.Freed, tot)
		}
		tr, err := Trim(ctx, w.pid, Options{Method: MethodPtrace})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("jvm trim: RSS %+v in %.1f ms", tr.RSS, tr.ElapsedMs)
		if tr.RSS.Diff < tot.RetainedBytes*8/10 {
			t.Errorf("trim gave back %d of %d retained", tr.RSS.Diff, tot.RetainedBytes)
		}
		checkRunning(t, w.pid)
		after := w.do("gc") // the JVM still collects and answers
		if after.Freed != w.ready.Freed || after.RSSKB<<10 > tr.RSS.After+(64<<20) {
			t.Errorf("after the trim the JVM says %+v", after)
		}
		checkRunning(t, w.pid)
	})
}

// checkOwnMallinfo inspects and trims a target that reports its own
// mallinfo2, and checks it goes on.
func checkOwnMallinfo(t *testing.T, w *workload) {
	t.Helper()
	ctx := context.Background()
	own := w.do("info")
	rep, err := Inspect(ctx, w.pid, Options{Method: MethodPtrace, Mallinfo2: true})
	skipIfPtraceDenied(t, err)
	if err != nil {
		t.Fatal(err)
	}
	tot := rep.Totals
	t.Logf("malloc_info: %d arenas, system %d free %d in use %d mmap %d retained %d; own mallinfo2 %+v; thread %d (%s) of %d held %.2f ms",
		tot.ArenaCount, tot.SystemBytes, tot.FreeBytes, tot.InUseBytes, tot.MmapBytes, tot.RetainedBytes, own,
		rep.Pause.Thread, rep.Pause.Why, rep.Pause.Threads, rep.Pause.AttachedMs)
	const slack = 64 << 10
	if !within(tot.SystemBytes, own.Arena, 0.01, slack) || !within(tot.FreeBytes, own.Fordblks, 0.01, slack) ||
		!within(tot.InUseBytes, own.Uordblks, 0.01, slack) || !within(tot.MmapBytes, own.Hblkhd, 0.01, slack) {
		t.Errorf("malloc_info totals %+v, the process' own mallinfo2 %+v", tot, own)
	}
	if mi := rep.Mallinfo2; mi == nil || !within(int64(mi.Arena), own.Arena, 0.01, slack) {
		t.Errorf("mallinfo2 read by memdoctor %+v, the process' own %+v", rep.Mallinfo2, own)
	}
	if tot.RetainedBytes < own.Fordblks/2 {
		t.Errorf("retained %d of %d free: the workload should hoard", tot.RetainedBytes, own.Fordblks)
	}
	tr, err := Trim(ctx, w.pid, Options{Method: MethodPtrace})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trim: RSS %+v in %.1f ms, held %.2f ms", tr.RSS, tr.ElapsedMs, tr.Pause.AttachedMs)
	if tr.Released == nil || *tr.Released != 1 || tr.RSS.Diff < tot.RetainedBytes*8/10 {
		t.Errorf("trim gave back %d of %d retained (released %v)", tr.RSS.Diff, tot.RetainedBytes, tr.Released)
	}
	checkRunning(t, w.pid)
	after := w.do("info")
	// malloc_trim also shrinks the main heap's top (sbrk), so arena may
	// fall a little; the process' RSS is what memdoctor measured.
	if after.Arena > own.Arena || !within(after.Arena, own.Arena, 0.01, 0) || after.RSSKB<<10 > tr.RSS.After+(8<<20) {
		t.Errorf("after the trim the process says %+v (before %+v)", after, own)
	}
	more := w.do("more") // it allocates again
	if more.Uordblks <= own.Uordblks {
		t.Errorf("in use %d after \"more\", %d before", more.Uordblks, own.Uordblks)
	}
	checkRunning(t, w.pid)
}
