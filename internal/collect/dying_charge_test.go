package collect_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/memdoctor/memdoctor/internal/capture"
)

// extractCapture writes a capture's files into a temporary directory
// that a test may then add to.
func extractCapture(t *testing.T, name string) string {
	t.Helper()
	fsys, _, err := capture.LoadFile(filepath.Join("..", "..", "testdata", "captures", name))
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil // a file the capture keeps unreadable (write-only), as the kernel has it
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(p)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// The lab's dying-cgroups capture (6.1, v2): a job runner's cgroup /jobs
// whose 120 jobs each read a file in a child cgroup and were removed
// while their page cache stayed charged. /jobs has no processes and no
// live child left (the root's cgroup.stat counts one live descendant and
// 121 dying: all of them below /jobs, whose own cgroup.stat and
// cgroup.procs the capture did not keep and are written as the kernel
// would have them), so all of its 33 MiB is held by dying descendants.
// With a live child charged 8 MiB, that child's usage is not counted;
// with a process of its own, nothing is claimed; on v1 nothing is
// measured.
func TestDyingChargeV2(t *testing.T) {
	t.Parallel()
	const usage = 34578432 // the capture's /jobs/memory.current
	cases := []struct {
		name  string
		add   map[string]string
		want  float64
		found bool
	}{
		{"no live child", nil, usage, true},
		{"a live child", map[string]string{
			"sys/fs/cgroup/jobs/runner/memory.current": "8388608\n",
			"sys/fs/cgroup/jobs/runner/memory.max":     "max\n",
			"sys/fs/cgroup/jobs/runner/memory.stat":    "anon 8388608\nfile 0\n",
			"sys/fs/cgroup/jobs/runner/cgroup.procs":   "4242\n",
		}, usage - 8388608, true},
		{"a process of its own", map[string]string{"sys/fs/cgroup/jobs/cgroup.procs": "4242\n"}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := extractCapture(t, "dying-cgroups-6.1-x86_64-v2.txtar")
			files := map[string]string{
				"sys/fs/cgroup/jobs/cgroup.stat":  "nr_descendants 0\nnr_dying_descendants 121\n",
				"sys/fs/cgroup/jobs/cgroup.procs": "",
			}
			for k, v := range c.add {
				files[k] = v
			}
			writeFiles(t, dir, files)
			res, err := collectDir(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			s := &res.Snapshot
			got, ok := s.Get("memdoctor_cgroup_memory_dying_charge_bytes", "cgroup", "/jobs")
			if ok != c.found || got != c.want {
				t.Errorf("/jobs dying charge %v (present %v), want %v (present %v)", got, ok, c.want, c.found)
			}
			if n, ok := s.Get("memdoctor_cgroup_dying_descendants", "cgroup", "/jobs"); ok != c.found || (ok && n != 121) {
				t.Errorf("/jobs dying descendants %v (present %v), want 121 (present %v)", n, ok, c.found)
			}
			if s.Has("memdoctor_cgroup_memory_dying_charge_bytes") && len(s.Select("memdoctor_cgroup_memory_dying_charge_bytes", "cgroup", "/jobs/runner")) > 0 {
				t.Error("a cgroup without dying descendants got a dying charge")
			}
		})
	}
}
