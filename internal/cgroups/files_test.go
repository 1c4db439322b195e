package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// TestCgroupStat: nr_dying_subsys_memory is the memory count where the
// kernel has it (≈6.11+), else nr_dying_descendants, said to be inexact.
func TestCgroupStat(t *testing.T) {
	t.Parallel()
	fs := writeTree(t, map[string]string{
		"new/cgroup.stat": "nr_descendants 12\nnr_dying_descendants 49\nnr_subsys_memory 13\nnr_dying_subsys_memory 40\n",
		"old/cgroup.stat": "nr_descendants 3\nnr_dying_descendants 7\n",
		"bad/cgroup.stat": "nr_descendants\n",
	})
	st, err := ReadCgroupStat(fs, "new")
	if err != nil {
		t.Fatal(err)
	}
	if n, exact, ok := st.DyingMemory(); n != 40 || !exact || !ok {
		t.Errorf("6.11+: %d %v %v", n, exact, ok)
	}
	if n, ok := st.Dying(); n != 49 || !ok {
		t.Errorf("6.11+ any controller: %d %v", n, ok)
	}
	st, err = ReadCgroupStat(fs, "old")
	if err != nil {
		t.Fatal(err)
	}
	if n, exact, ok := st.DyingMemory(); n != 7 || exact || !ok {
		t.Errorf("before 6.11: %d %v %v", n, exact, ok)
	}
	if _, err := ReadCgroupStat(fs, "bad"); err == nil || !strings.Contains(err.Error(), "bad/cgroup.stat") {
		t.Errorf("a malformed cgroup.stat: %v", err)
	}
	if _, err := ReadCgroupStat(fs, "gone"); err == nil {
		t.Error("a missing cgroup.stat read")
	}
}

// TestMemoryStatV1Local: v1's own counters, in v2 names, never the
// hierarchical total_* ones.
func TestMemoryStatV1Local(t *testing.T) {
	t.Parallel()
	fs := writeTree(t, map[string]string{"cg/memory.stat": "cache 8192\nrss 4096\nrss_huge 0\nshmem 0\nmapped_file 4096\ndirty 12288\nwriteback 0\n" +
		"total_cache 999999\ntotal_rss 999999\ntotal_dirty 999999\n"})
	st, err := ReadMemoryStat(fs, "cg")
	if err != nil {
		t.Fatal(err)
	}
	got := st.V1Local()
	want := map[string]int64{"file": 8192, "anon": 4096, "shmem": 0, "file_mapped": 4096, "file_dirty": 12288, "file_writeback": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("V1Local = %v, want %v", got, want)
	}
}

// TestMemoryController: proc/cgroups' memory line gives the hierarchy id
// (0 on the unified tree, -1 when disabled) and, on v1, the dying count.
func TestMemoryController(t *testing.T) {
	t.Parallel()
	const head = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\n"
	for _, tc := range []struct {
		body  string
		id    int
		dying int64
		err   bool
	}{
		{head + "memory\t4\t35\t1\n", 4, 25, false},
		{head + "memory\t0\t12\t1\n", 0, 2, false},
		{head + "memory\t4\t35\t0\n", -1, 25, false},
		{head + "memory\t4\t5\t1\n", 4, 0, false},
		{head, -1, 0, true},
	} {
		fs := writeTree(t, map[string]string{"proc/cgroups": tc.body})
		if id := MemoryHierarchyID(fs); id != tc.id {
			t.Errorf("%q: hierarchy %d, want %d", tc.body, id, tc.id)
		}
		n, err := DyingV1(fs, 10)
		if (err != nil) != tc.err || n != tc.dying {
			t.Errorf("%q: dying %d %v, want %d", tc.body, n, err, tc.dying)
		}
	}
}

// TestParseProcCgroup: v1, named and unified lines; a line without two
// colons is skipped; a path with colons is kept whole; the lines kept are
// bounded.
func TestParseProcCgroup(t *testing.T) {
	t.Parallel()
	got := ParseProcCgroup([]byte("12:cpu,cpuacct:/user.slice\n4:memory:/system.slice/a:b.service\n1:name=systemd:/system.slice/a.service\n" +
		"0::/system.slice/a.service\nnonsense\n"))
	if len(got) != 4 {
		t.Fatalf("%d lines: %+v", len(got), got)
	}
	if !got[0].Has("cpuacct") || got[0].Has("memory") || got[0].Unified() {
		t.Errorf("cpu line: %+v", got[0])
	}
	if !got[1].Has("memory") || got[1].Path != "/system.slice/a:b.service" {
		t.Errorf("memory line: %+v", got[1])
	}
	if !slices.Equal(got[2].Controllers, []string{"name=systemd"}) {
		t.Errorf("named line: %+v", got[2])
	}
	if !got[3].Unified() || got[3].Path != "/system.slice/a.service" || got[3].Has("") {
		t.Errorf("unified line: %+v", got[3])
	}
	if n := len(ParseProcCgroup([]byte(strings.Repeat("0::/x\n", 10000)))); n != maxProcCgroupLines {
		t.Errorf("10000 lines kept %d", n)
	}
	// This process's own: its memory cgroup's line (v1's, else the
	// unified one) names a directory of the memory hierarchy.
	fs := procfs.NewFS("/")
	own, err := ReadProcCgroup(fs, os.Getpid())
	if err != nil || len(own) == 0 {
		t.Fatalf("proc/self/cgroup: %v %+v", err, own)
	}
	m, _, err := FindMounts(fs)
	root, v1, ok := m.Memory()
	if err != nil || !ok {
		return
	}
	for _, l := range own {
		if (v1 && l.Has("memory")) || (!v1 && l.Unified()) {
			if !fs.Exists(root + strings.TrimSuffix(l.Path, "/")) {
				t.Errorf("%+v: no /%s%s", l, root, l.Path)
			}
			return
		}
	}
	t.Errorf("no memory line in %+v", own)
}

// TestWalkInodes: the walk gives each directory its inode and its path
// below the mount, the root first, skips files, and stops at its bound;
// on a real memory cgroup (as root) the inode is the cgroup's.
func TestWalkInodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"a/x", "a/y", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "memory.stat"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{}
	var order []string
	capped, err := WalkInodes(dir, 100, func(ino uint64, rel string) bool {
		seen[rel] = ino
		order = append(order, rel)
		return true
	})
	if err != nil || capped {
		t.Fatal(err, capped)
	}
	if want := []string{"/", "/a", "/a/x", "/a/y", "/b"}; !slices.Equal(order, want) {
		t.Errorf("walked %v, want %v", order, want)
	}
	for rel, ino := range seen {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, rel), &st); err != nil || uint64(st.Ino) != ino { //nolint:unconvert // not uint64 everywhere
			t.Errorf("%s: inode %d, stat says %d (%v)", rel, ino, st.Ino, err)
		}
	}
	n := 0
	capped, _ = WalkInodes(dir, 2, func(uint64, string) bool { n++; return true })
	if !capped || n != 2 {
		t.Errorf("bound 2: %d directories, capped %v", n, capped)
	}
	n = 0
	capped, _ = WalkInodes(dir, 100, func(uint64, string) bool { n++; return n < 3 })
	if capped || n != 3 {
		t.Errorf("stopped by fn at 3: %d directories, capped %v", n, capped)
	}
	if _, err := WalkInodes(filepath.Join(dir, "gone"), 100, func(uint64, string) bool { return true }); err == nil {
		t.Error("a missing mount walked")
	}
}

// TestWalkInodesCgroup: below a memory cgroup of the test's own, the walk
// names its child by the inode the kernel gives the child's directory.
func TestWalkInodesCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("makes memory cgroups")
	}
	parent := testParent(t)
	child := filepath.Join(parent, "child")
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(child, &st); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]string{}
	if _, err := WalkInodes(parent, 10, func(ino uint64, rel string) bool { got[ino] = rel; return true }); err != nil {
		t.Fatal(err)
	}
	if got[uint64(st.Ino)] != "/child" || len(got) != 2 { //nolint:unconvert // not uint64 everywhere
		t.Errorf("walk %v, want inode %d as /child", got, st.Ino)
	}
}
