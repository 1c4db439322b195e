package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckScanPagesNamesPinnedCache (root, cgroup v1 memory controller): a
// job runner leaves 200 removed memory cgroups below its own cgroup, each
// pinned by 2 MiB of page cache, 1 MiB of it left dirty; check
// --scan-pages says how much page cache pins them, where, and that some is
// dirty. Without the flag the finding says nothing of it.
func TestCheckScanPagesNamesPinnedCache(t *testing.T) {
	requireLinuxRoot(t)
	root, v2 := memoryHierarchy(t)
	if v2 {
		t.Skip("the pinned share is split on cgroup v1 only")
	}
	parent, err := os.MkdirTemp(root, "memdoctor-scanpages-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(parent) })
	data := t.TempDir()
	const n = 200
	for i := range n {
		cg := filepath.Join(parent, fmt.Sprintf("job%d", i))
		if err := os.Mkdir(cg, 0o755); err != nil {
			t.Fatal(err)
		}
		// 1 MiB synced, then 1 MiB left for writeback to flush later.
		script := `echo $$ > "$1/cgroup.procs" && dd if=/dev/zero of="$2.clean" bs=1M count=1 conv=fsync status=none && exec dd if=/dev/zero of="$2.dirty" bs=1M count=1 status=none`
		if out, err := exec.Command("sh", "-c", script, "job", cg, filepath.Join(data, fmt.Sprint(i))).CombinedOutput(); err != nil {
			t.Fatalf("job %d: %v: %s", i, err, out)
		}
		if err := os.Remove(cg); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.RemoveAll(data) })
	rel := "/" + filepath.Base(parent)

	plain := checkJSON(t, "--top", "0")
	if f := finding(plain, "dying_cgroups"); f != nil && strings.Contains(f.Summary, "pins them") {
		t.Errorf("without --scan-pages: %s", f.Summary)
	}
	r := checkJSON(t, "--top", "0", "--scan-pages")
	f := finding(r, "dying_cgroups")
	if f == nil {
		t.Fatalf("dying_cgroups did not fire with %v dying; notes %+v", r.Cgroups.MemoryDying, r.Notes)
	}
	t.Logf("%s", f.Summary)
	wrote := float64(n * 2 << 20)
	if v, ok := evidence(f, "pinned_page_cache_bytes"); !ok || v < 0.9*wrote {
		t.Errorf("pinned_page_cache_bytes %v, want at least 90%% of the %v written", v, wrote)
	}
	under := ""
	for _, e := range f.Evidence {
		if e.Name == "pinned_under" && strings.HasPrefix(e.Text, rel+": ") {
			under = e.Text
		}
	}
	if under == "" {
		t.Errorf("no pinned_under evidence names %s: %+v", rel, f.Evidence)
	}
	// Background writeback may have flushed some of the dirty half by now;
	// the dirty share is judged only while the kernel still reports it.
	if d, ok := evidence(f, "pinned_dirty_bytes"); !ok {
		t.Error("no pinned_dirty_bytes evidence")
	} else if d > 0 && !strings.Contains(f.Summary, "dirty") {
		t.Errorf("%v bytes pinned dirty, but the summary does not say so: %s", d, f.Summary)
	}
}
