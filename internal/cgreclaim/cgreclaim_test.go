package cgreclaim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const mountinfo = "25 1 0:23 / /sys rw - sysfs sysfs rw\n30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"

// A job runner's parent (/jobs) with dying jobs below it, one live job, a
// dying grandchild under a live job, and dying cgroups right below the
// root: each dying cgroup is counted once, under the deepest live cgroup
// that holds it, and the root is reported, never written.
func TestPlanAndApply(t *testing.T) {
	root := tree(t, map[string]string{
		"proc/self/mountinfo":                       mountinfo,
		"sys/fs/cgroup/cgroup.controllers":          "cpu io memory pids\n",
		"sys/fs/cgroup/cgroup.stat":                 "nr_descendants 4\nnr_dying_descendants 7\n",
		"sys/fs/cgroup/memory.reclaim":              "",
		"sys/fs/cgroup/jobs/cgroup.stat":            "nr_descendants 2\nnr_dying_descendants 5\n",
		"sys/fs/cgroup/jobs/memory.stat":            "anon 4096\nfile 10008192\nfile_dirty 4096\nfile_writeback 4096\nslab_reclaimable 300000\n",
		"sys/fs/cgroup/jobs/memory.reclaim":         "",
		"sys/fs/cgroup/jobs/live/cgroup.stat":       "nr_descendants 0\nnr_dying_descendants 0\n",
		"sys/fs/cgroup/jobs/live/memory.stat":       "anon 4096\nfile 300000\nslab_reclaimable 100000\n",
		"sys/fs/cgroup/jobs/live/memory.reclaim":    "",
		"sys/fs/cgroup/jobs/batch/cgroup.stat":      "nr_descendants 0\nnr_dying_descendants 1\n",
		"sys/fs/cgroup/jobs/batch/memory.stat":      "anon 4096\nfile 100\n",
		"sys/fs/cgroup/jobs/batch/memory.reclaim":   "",
		"sys/fs/cgroup/system.slice/cgroup.stat":    "nr_descendants 0\nnr_dying_descendants 0\n",
		"sys/fs/cgroup/system.slice/memory.stat":    "anon 4096\nfile 5000\n",
		"sys/fs/cgroup/system.slice/memory.reclaim": "",
	})
	p, err := MakePlan(procfs.NewFS(root), "/")
	if err != nil {
		t.Fatal(err)
	}
	if p.Mount != "sys/fs/cgroup" || p.Dying != 7 || p.RootDying != 2 || !p.HasReclaim {
		t.Fatalf("plan %+v", p)
	}
	want := []Target{{Path: "/jobs", Dying: 4, Bytes: 10000000 - 300000 - 100, Dirty: 8192, Slab: 200000}, {Path: "/jobs/batch", Dying: 1, Bytes: 100}}
	if len(p.Targets) != len(want) {
		t.Fatalf("targets %+v, want %+v", p.Targets, want)
	}
	for i := range want {
		if p.Targets[i] != want[i] {
			t.Errorf("target %d: %+v, want %+v", i, p.Targets[i], want[i])
		}
	}
	// 9 699 900 bytes in chunks of 4 MiB, then (dying cgroups remain: this
	// cgroup.stat never changes) the second pass, the reclaimable slab:
	// the last write, at offset 0 of this plain file, is 200 000 over the
	// remainder 1 311 292. batch's second pass asks for at least 64 KiB.
	res, err := Apply(root, p, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{"jobs": "2000002", "jobs/batch": "65536", "jobs/live": "", "system.slice": "", ".": ""} {
		b, err := os.ReadFile(filepath.Join(root, "sys/fs/cgroup", path, "memory.reclaim"))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != body {
			t.Errorf("%s/memory.reclaim = %q, want %q", path, b, body)
		}
	}
	if res.Before != 7 || res.After != 7 || len(res.Outcomes) != 2 {
		t.Errorf("result %+v", res)
	}

	// Only a subtree.
	p, err = MakePlan(procfs.NewFS(root), "/jobs/batch")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Targets) != 1 || p.Targets[0].Path != "/jobs/batch" {
		t.Errorf("subtree plan %+v", p.Targets)
	}
}

func TestNoV2AndNoReclaim(t *testing.T) {
	v1 := tree(t, map[string]string{
		"proc/self/mountinfo": "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
	})
	// v1: the root has no memory.force_empty; the live cgroup above the
	// dying ones is asked for (the kernel's side is TestReclaimV1ForceEmpty).
	if _, err := MakePlan(procfs.NewFS(v1), "/"); err == nil || errors.Is(err, ErrNoV2) || !strings.Contains(err.Error(), "--cgroup") {
		t.Errorf("v1 root: %v, want the refusal naming --cgroup", err)
	}
	none := tree(t, map[string]string{"proc/self/mountinfo": "25 1 0:23 / /sys rw - sysfs sysfs rw\n"})
	if _, err := MakePlan(procfs.NewFS(none), "/"); !errors.Is(err, ErrNoV2) {
		t.Errorf("no memory hierarchy: %v, want ErrNoV2", err)
	}
	old := tree(t, map[string]string{
		"proc/self/mountinfo":              mountinfo,
		"sys/fs/cgroup/cgroup.controllers": "memory\n",
		"sys/fs/cgroup/cgroup.stat":        "nr_dying_descendants 3\n",
		"sys/fs/cgroup/jobs/cgroup.stat":   "nr_dying_descendants 3\n",
		"sys/fs/cgroup/jobs/memory.stat":   "anon 4096\nfile 4096\n",
	})
	p, err := MakePlan(procfs.NewFS(old), "/")
	if err != nil {
		t.Fatal(err)
	}
	if p.HasReclaim || len(p.Targets) != 1 {
		t.Fatalf("plan %+v", p)
	}
	if _, err := Apply(old, p, 0); err == nil {
		t.Error("Apply without memory.reclaim succeeded")
	}
}
