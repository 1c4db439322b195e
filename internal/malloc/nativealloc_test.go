package malloc

// jemalloc and tcmalloc read and treated through their own functions, on
// testdata/programs/retain.c linked with or preloaded with Debian's
// libjemalloc2 and libtcmalloc-minimal4: the figures agree with what the
// allocator tells the program itself, and the treatment gives the retained
// pages back to the kernel.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/inject"
)

// ownStats is retain's "stats" answer: its allocator's own figures.
type ownStats struct {
	Allocator        string `json:"allocator"`
	Allocated        int64  `json:"allocated"`
	Active           int64  `json:"active"`
	Resident         int64  `json:"resident"`
	Mapped           int64  `json:"mapped"`
	Dirty            int64  `json:"dirty"`
	HeapSize         int64  `json:"heap_size"`
	PageheapFree     int64  `json:"pageheap_free"`
	PageheapUnmapped int64  `json:"pageheap_unmapped"`
	Committed        int64  `json:"committed"`
	RSSKB            int64  `json:"rss_kb"`
}

type retainProc struct {
	t     testing.TB
	pid   int
	in    io.Writer
	lines *bufio.Reader
	// charge is the memory.usage_in_bytes (v1) or memory.current (v2) of
	// the memory cgroup made for it, "" when none could be made.
	charge string
}

// memoryCgroup makes a memory cgroup for one test (as root, where the
// memory controller is mounted) and returns it with its charge file, or
// "" when there is none.
func memoryCgroup(t testing.TB) (dir, charge string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return "", ""
	}
	root, file := "/sys/fs/cgroup/memory", "memory.usage_in_bytes"
	if _, err := os.Stat(filepath.Join(root, file)); err != nil {
		root, file = "/sys/fs/cgroup", "memory.current"
		if b, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control")); err != nil || !strings.Contains(string(b), "memory") {
			return "", ""
		}
	}
	dir, err := os.MkdirTemp(root, "memdoctor-malloc-test-")
	if err != nil {
		return "", ""
	}
	t.Cleanup(func() {
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond) // its process is still exiting
		}
	})
	return dir, filepath.Join(dir, file)
}

// chargeNow reads the process' memory cgroup charge (-1 without one).
func (p *retainProc) chargeNow() int64 {
	if p.charge == "" {
		return -1
	}
	b, err := os.ReadFile(p.charge)
	if err != nil {
		p.t.Fatal(err)
	}
	var v int64
	if _, err := fmt.Sscan(string(b), &v); err != nil {
		p.t.Fatalf("%s: %q", p.charge, b)
	}
	return v
}

func (p *retainProc) stats() ownStats {
	p.t.Helper()
	if _, err := fmt.Fprintln(p.in, "stats"); err != nil {
		p.t.Fatal(err)
	}
	l, err := p.lines.ReadString('\n')
	if err != nil {
		p.t.Fatalf("retain %d: %v", p.pid, err)
	}
	var s ownStats
	if err := json.Unmarshal([]byte(l), &s); err != nil {
		p.t.Fatalf("retain printed %q", l)
	}
	return s
}

// nativeLib is a Debian allocator library, or a skip.
func nativeLib(t testing.TB, name string) string {
	t.Helper()
	for _, d := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"} {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("%s not installed (scripts/install-test-deps.sh)", name)
	return ""
}

// startRetain builds retain.c (linked with lib when linked, else with lib
// in LD_PRELOAD) and runs it on mib MiB in the given pattern.
func startRetain(t testing.TB, lib string, linked bool, mib int, pattern string) *retainProc {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (apt-get install gcc)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "retain")
	args := []string{"-O1", "-o", bin, filepath.Join("..", "..", "testdata", "programs", "retain.c")}
	if linked {
		args = append(args, lib)
	}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
	cg, charge := memoryCgroup(t)
	cmd := exec.Command(bin, fmt.Sprint(mib), pattern)
	if cg != "" {
		// Started inside its own memory cgroup: the charge is its own.
		cmd = exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", cg, bin, fmt.Sprint(mib), pattern)
	}
	if !linked {
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	p := &retainProc{t: t, pid: cmd.Process.Pid, in: in, lines: bufio.NewReader(out), charge: charge}
	ready := make(chan error, 1)
	go func() {
		l, err := p.lines.ReadString('\n')
		if err == nil && strings.TrimSpace(l) != "ready" {
			err = fmt.Errorf("printed %q", l)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("retain: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("retain not ready within 2 minutes")
	}
	return p
}

func TestNativeReadAndTrim(t *testing.T) {
	requirePtrace(t)
	je := "libjemalloc.so.2"
	tc := "libtcmalloc_minimal.so.4"
	for _, c := range []struct {
		name, lib, want string
		linked          bool
	}{
		{"linked jemalloc", je, inject.AllocJemalloc, true},
		{"preloaded jemalloc", je, inject.AllocJemalloc, false},
		{"preloaded tcmalloc", tc, inject.AllocTcmalloc, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startRetain(t, nativeLib(t, c.lib), c.linked, 192, "block")
			own := p.stats()
			if own.Allocator != c.want {
				t.Fatalf("the program's allocator says %q, want %q", own.Allocator, c.want)
			}
			ctx := context.Background()
			rep, err := Inspect(ctx, p.pid, Options{})
			skipIfPtraceDenied(t, err)
			if err != nil {
				t.Fatal(err)
			}
			checkRunning(t, p.pid)
			after := p.stats()
			ns := rep.Native
			if rep.Allocator != c.want || ns == nil || ns.Allocator != c.want || rep.Source != "ptrace" {
				t.Fatalf("report: allocator %q, native %+v, source %q", rep.Allocator, ns, rep.Source)
			}
			t.Logf("%s: memdoctor read %+v; the program's own: %+v; hold %.2f ms (%d calls)", c.name, *ns, own, rep.Pause.AttachedMs, len(rep.Pause.Calls))
			// 192 MiB in 512-byte blocks, the last third kept: 64 MiB
			// allocated plus the 3 MiB array of pointers, 128 MiB free
			// in whole pages.
			const mib = 1 << 20
			if !within(ns.AllocatedBytes, own.Allocated, 0.02, 256<<10) || !within(ns.AllocatedBytes, 67*mib, 0.05, 0) {
				t.Errorf("allocated %d, the program's allocator says %d (and %d after), the program holds about %d", ns.AllocatedBytes, own.Allocated, after.Allocated, 67*mib)
			}
			if !within(ns.FreeResidentBytes, 128*mib, 0.1, 0) {
				t.Errorf("free resident %d, the program freed 128 MiB in whole pages", ns.FreeResidentBytes)
			}
			if rep.Totals.RetainedBytes != ns.FreeResidentBytes || rep.Totals.InUseBytes != ns.AllocatedBytes {
				t.Errorf("totals %+v do not carry the allocator's figures", rep.Totals)
			}
			switch c.want {
			case inject.AllocJemalloc:
				if !within(ns.ResidentBytes, own.Resident, 0.02, 256<<10) || !within(*ns.DirtyBytes, own.Dirty, 0.02, 256<<10) || !within(*ns.ActiveBytes, own.Active, 0.02, 256<<10) {
					t.Errorf("resident %d dirty %d active %d, the program's jemalloc says %d %d %d", ns.ResidentBytes, *ns.DirtyBytes, *ns.ActiveBytes, own.Resident, own.Dirty, own.Active)
				}
				if ns.BackgroundThread == nil || *ns.BackgroundThread || ns.DirtyDecayMs == nil || ns.PageSize <= 0 || ns.Arenas <= 0 || !strings.HasPrefix(ns.Version, "5.") {
					t.Errorf("jemalloc's settings: %+v", *ns)
				}
			case inject.AllocTcmalloc:
				if !within(*ns.PageheapFreeBytes, own.PageheapFree, 0.02, 256<<10) || !within(*ns.HeapSizeBytes, own.HeapSize, 0.02, 256<<10) {
					t.Errorf("page heap free %d heap %d, the program's tcmalloc says %d %d", *ns.PageheapFreeBytes, *ns.HeapSizeBytes, own.PageheapFree, own.HeapSize)
				}
			}

			est, err := Estimate(ctx, p.pid, Options{}, false)
			if err != nil {
				t.Fatal(err)
			}
			if est.Allocator != c.want || est.ExpectedGainBytes == nil || *est.ExpectedGainBytes < 100*mib || est.Nothing != "" ||
				!strings.Contains(strings.Join(est.Steps, "\n"), est.Call) {
				t.Errorf("estimate: %+v", est)
			}
			chargeBefore := p.chargeNow()
			res, err := Trim(ctx, p.pid, Options{})
			if err != nil {
				t.Fatal(err)
			}
			chargeAfter := p.chargeNow()
			checkRunning(t, p.pid)
			t.Logf("%s: %s: RSS %d -> %d kB, memory cgroup charge %d -> %d kB, in %.1f ms, held %.1f ms", c.name, res.Call, res.RSS.Before>>10, res.RSS.After>>10,
				chargeBefore>>10, chargeAfter>>10, res.ElapsedMs, res.Pause.AttachedMs)
			if p.charge != "" && chargeBefore-chargeAfter < 100*mib {
				t.Errorf("the memory cgroup's charge fell by %d bytes, want more than 100 MiB", chargeBefore-chargeAfter)
			}
			// Most of the free pages go back; the process lives on.
			if res.Allocator != c.want || res.RSS.Diff < 100*mib {
				t.Errorf("trim: %+v, want RSS down by more than 100 MiB", res)
			}
			if got := p.stats(); got.RSSKB<<10 > res.RSS.Before-100*mib || !within(got.Allocated, own.Allocated, 0.02, 256<<10) {
				t.Errorf("after the trim the program says %+v", got)
			}
			// Nothing left: the dry run says so.
			est, err = Estimate(ctx, p.pid, Options{}, false)
			if err != nil {
				t.Fatal(err)
			}
			if est.Nothing == "" || *est.ExpectedGainBytes >= nothingBelow {
				t.Errorf("after the trim the estimate offers %d: %+v", *est.ExpectedGainBytes, est)
			}
		})
	}
}

// A fragmented heap (two of every three small blocks freed, the survivors
// on every page): nothing whole to give back, which the dry run says.
func TestNativeEstimateFragmented(t *testing.T) {
	requirePtrace(t)
	p := startRetain(t, nativeLib(t, "libjemalloc.so.2"), false, 96, "interleave")
	est, err := Estimate(context.Background(), p.pid, Options{}, false)
	skipIfPtraceDenied(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("estimate: gain %d, nothing: %s", *est.ExpectedGainBytes, est.Nothing)
	if est.Nothing == "" || !strings.Contains(est.Nothing, "fragmentation") {
		t.Errorf("a fragmented jemalloc heap: %+v", est)
	}
}

// mimalloc (Debian's libmimalloc2.0) does not count what is allocated:
// memdoctor reads its committed memory (mi_process_info, eight arguments,
// two on the stack), the dry run gives only a bound, and mi_collect(true)
// gives the free pages back.
func TestNativeMimalloc(t *testing.T) {
	requirePtrace(t)
	p := startRetain(t, nativeLib(t, "libmimalloc.so.2"), false, 192, "block")
	own := p.stats()
	if own.Allocator != inject.AllocMimalloc {
		t.Fatalf("the program's allocator says %q", own.Allocator)
	}
	ctx := context.Background()
	rep, err := Inspect(ctx, p.pid, Options{})
	skipIfPtraceDenied(t, err)
	if err != nil {
		t.Fatal(err)
	}
	checkRunning(t, p.pid)
	ns := rep.Native
	if rep.Allocator != inject.AllocMimalloc || ns == nil || ns.CommittedBytes == nil || ns.Unknown == "" {
		t.Fatalf("report: allocator %q, native %+v", rep.Allocator, ns)
	}
	t.Logf("committed %d, the program's own %d; hold %.2f ms", *ns.CommittedBytes, own.Committed, rep.Pause.AttachedMs)
	if !within(*ns.CommittedBytes, own.Committed, 0.02, 256<<10) || *ns.CommittedBytes < 192<<20 {
		t.Errorf("committed %d, the program's mimalloc says %d (it touched 195 MiB)", *ns.CommittedBytes, own.Committed)
	}
	est, err := Estimate(ctx, p.pid, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if est.UpperBoundBytes == nil || est.ExpectedGainBytes != nil || *est.UpperBoundBytes < 128<<20 || est.Call != "mi_collect(true)" {
		t.Errorf("estimate: %+v", est)
	}
	chargeBefore := p.chargeNow()
	res, err := Trim(ctx, p.pid, Options{})
	if err != nil {
		t.Fatal(err)
	}
	chargeAfter := p.chargeNow()
	checkRunning(t, p.pid)
	t.Logf("%s: RSS %d -> %d kB, memory cgroup charge %d -> %d kB, in %.1f ms", res.Call, res.RSS.Before>>10, res.RSS.After>>10, chargeBefore>>10, chargeAfter>>10, res.ElapsedMs)
	if res.RSS.Diff < 64<<20 || p.charge != "" && chargeBefore-chargeAfter < 64<<20 {
		t.Errorf("mi_collect(true) gave back %d bytes of RSS and %d of the charge, want 64 MiB or more", res.RSS.Diff, chargeBefore-chargeAfter)
	}
	if got := p.stats(); got.RSSKB<<10 > res.RSS.Before-64<<20 {
		t.Errorf("after the trim the program says %+v", got)
	}
}

// A mallctl that waits for ever on a lock (a deadlocked allocator, or a
// target's own function that never returns): the nested call is waited for
// past the timeout, then interrupted CallGrace later with an error that
// says a lock may stay held; memdoctor does not hang and the process runs
// on.
func TestNativeNestedCallBounded(t *testing.T) {
	requirePtrace(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (apt-get install gcc)")
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libjemalloc.so.2")
	src := filepath.Join("..", "..", "testdata", "programs", "stuck_mallctl.c")
	if out, err := exec.Command("gcc", "-O1", "-shared", "-fPIC", "-o", lib, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	p := startRetain(t, lib, false, 8, "keep")
	start := time.Now()
	_, err := Inspect(context.Background(), p.pid, Options{Timeout: 300 * time.Millisecond, CallGrace: 700 * time.Millisecond})
	skipIfPtraceDenied(t, err)
	took := time.Since(start)
	t.Logf("after %s: %v", took, err)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "may have held another allocator lock") {
		t.Errorf("a mallctl that never returns: %v, want a timeout saying a lock may stay held", err)
	}
	if took < time.Second || took > 10*time.Second {
		t.Errorf("Inspect returned after %s: want the timeout and the grace (1 s), not much more", took)
	}
	checkRunning(t, p.pid)
	// It still allocates and answers (its own "stats" would call the
	// stuck mallctl: "more" only allocates).
	answered := make(chan error, 1)
	go func() {
		_, err := fmt.Fprintln(p.in, "more")
		if err == nil {
			var l string
			if l, err = p.lines.ReadString('\n'); err == nil && strings.TrimSpace(l) != "ready" {
				err = fmt.Errorf("printed %q", l)
			}
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Errorf("the process after the interrupted call: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the process does not answer after the interrupted call")
	}
}
