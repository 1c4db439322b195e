package cgtrace_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgtrace"
)

// TestTraceNamesMemcgOfExitedCreator (root, v1 memory controller): a
// runner in a memory cgroup of its own makes and removes 20 cgroups and
// exits, with its shell, before the tracer drains its ring at all (it
// polls once an hour here, and drains when stopped): the memory cgroup the
// kernel recorded with each event still names it (and, without a systemd
// unit, is its unit).
func TestTraceNamesMemcgOfExitedCreator(t *testing.T) {
	mem := memoryMount(t)
	bin := jobRunners(t, "cgt-gone")[0]
	home, parent := tempCgroup(t, mem), tempCgroup(t, mem)
	tr, err := cgtrace.Start(t.Context(), cgtrace.Options{Poll: time.Hour, Hierarchy: cgtrace.MemoryHierarchyID("/proc"), Method: "bpf"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" "$3" "$4" 0 20 0`, "sh", home, bin, parent, t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid))); err == nil {
		t.Fatalf("the runner (%d) is still there", cmd.Process.Pid)
	}
	tr.Stop()
	s := tr.Take()
	c := creator(s, "cgt-gone")
	if c == nil {
		t.Fatalf("cgt-gone not among the creators: %+v", s.Creators)
	}
	want := "/" + filepath.Base(home)
	if c.Cgroup != want || c.Unit != want {
		t.Errorf("cgt-gone: memory cgroup %q, unit %q; want %q for both", c.Cgroup, c.Unit, want)
	}
	if c.Mkdir != 20 || c.Rmdir != 20 {
		t.Errorf("cgt-gone: %d mkdir, %d rmdir; want 20 each", c.Mkdir, c.Rmdir)
	}
}

// TestTraceDyingAge (root, v1 memory controller): one runner's jobs each
// leave 64 KiB of page cache charged to their cgroup, so its 40 removed
// cgroups stay allocated; another's jobs write nothing and their cgroups
// are freed. The trace counts the first's as dying, names the oldest of
// them by path with an age within the trace, and none of the second's.
func TestTraceDyingAge(t *testing.T) {
	mem := memoryMount(t)
	bins := jobRunners(t, "cgt-pinned", "cgt-clean")
	pinned, clean := tempCgroup(t, mem), tempCgroup(t, mem)
	// The page cache the runner leaves is dropped with its files.
	data := t.TempDir()
	start := time.Now()
	tr, err := cgtrace.Start(t.Context(), cgtrace.Options{Hierarchy: cgtrace.MemoryHierarchyID("/proc"), Method: "bpf"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, j := range []struct{ bin, parent, kib string }{{bins[0], pinned, "64"}, {bins[1], clean, "0"}} {
		if out, err := exec.Command(j.bin, j.parent, data, "0", "40", j.kib).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	time.Sleep(time.Second) // the clean runner's cgroups are freed
	tr.Stop()
	s := tr.Take()
	if !s.DyingTraced {
		t.Fatalf("removed cgroups not followed: %v", s.Notes)
	}
	t.Logf("dying %d (untracked %d), oldest %+v", s.Dying, s.DyingUntracked, s.OldestDying)
	// Other users of the host may remove memory cgroups during the trace:
	// at least this runner's 40.
	if s.Dying < 40 {
		t.Errorf("%d removed cgroups still dying, want at least cgt-pinned's 40", s.Dying)
	}
	if len(s.OldestDying) != cgtrace.OldestDyingKept {
		t.Fatalf("oldest dying: %+v", s.OldestDying)
	}
	elapsed := time.Since(start)
	for i, d := range s.OldestDying {
		if strings.Contains(d.Path, "cgt-clean") {
			t.Errorf("a freed cgroup counted as dying: %+v", d)
		}
		if d.Age <= 0 || d.Age > elapsed {
			t.Errorf("age %v outside the trace (%v)", d.Age, elapsed)
		}
		if i > 0 && d.Age > s.OldestDying[i-1].Age {
			t.Errorf("not oldest first: %+v", s.OldestDying)
		}
	}
	// The first jobs' cgroups are the oldest this test made, named with
	// their whole path: the first as the trace saw it made, the others
	// (counted in the kernel, no record each) from the name the kernel
	// side kept and their parent's path.
	// Cgroups other users removed during the trace may be among the
	// oldest: this test's own are in order, from its first.
	own := strings.TrimPrefix(pinned, mem) + "/"
	i := 0
	for _, d := range s.OldestDying {
		if !strings.HasPrefix(d.Path, own) {
			continue
		}
		if want := fmt.Sprintf("%scgt-pinned-%d", own, i); d.Path != want {
			t.Errorf("dying cgroup %d of this test's: %+v, want path %s", i, d, want)
		}
		i++
	}
	if i == 0 {
		t.Errorf("none of the oldest dying cgroups is this test's: %+v", s.OldestDying)
	}
}
