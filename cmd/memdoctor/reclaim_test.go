package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reclaim's dry run changes nothing and says what --apply would write;
// --apply writes it. The tree is a directory laid out as the host's /proc
// and /sys (the kernel's own behaviour is tested in the lab, lab/).
func TestReclaimDryRunThenApply(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"proc/self/mountinfo":               "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
		"sys/fs/cgroup/cgroup.controllers":  "memory pids\n",
		"sys/fs/cgroup/cgroup.stat":         "nr_descendants 1\nnr_dying_descendants 40\n",
		"sys/fs/cgroup/jobs/cgroup.stat":    "nr_descendants 0\nnr_dying_descendants 40\n",
		"sys/fs/cgroup/jobs/memory.stat":    "file 10489856\nfile_dirty 4096\nfile_writeback 0\nslab_reclaimable 8192\n",
		"sys/fs/cgroup/jobs/memory.reclaim": "",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reclaim := filepath.Join(root, "sys/fs/cgroup/jobs/memory.reclaim")
	out, errOut, code := runCLI(t, "reclaim", "--root", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"40 dying cgroups", "/jobs: 40 dying below it; would write 10485760 (10.0 MiB) to /sys/fs/cgroup/jobs/memory.reclaim",
		"4.00 KiB of dirty cache not asked for", "dry run: nothing changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(reclaim); len(b) != 0 {
		t.Fatalf("the dry run wrote %q", b)
	}
	out, errOut, code = runCLI(t, "reclaim", "--root", root, "--apply", "--wait", "2s", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"applied": true`) || !strings.Contains(out, `"dying_before": 40`) {
		t.Errorf("--apply --json:\n%s", out)
	}
	// 10 MiB in chunks of 4 MiB, then the slab pass (at least 64 KiB),
	// each written at offset 0 of this plain file: "65536" over "2097152".
	if b, _ := os.ReadFile(reclaim); string(b) != "6553652" {
		t.Errorf("memory.reclaim holds %q", b)
	}
}
