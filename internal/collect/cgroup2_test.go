package collect_test

// cgroup v2 with the memory controller cannot run on the development host
// (memory is bound to its v1 hierarchy), so the v2 layout is built here the
// way the kernel presents it: a cgroup2 mount, root cgroup.stat with the
// per-controller dying counts (≈6.11+) or without them (older kernels).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCgroupV2(t *testing.T) {
	t.Parallel()
	const mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	v2stat := "anon 104857600\nfile 52428800\nkernel 1048576\nshmem 4096\nslab_reclaimable 1\nslab_unreclaimable 2\n"
	base := map[string]string{
		"proc/self/mountinfo":                                  mountinfo,
		"proc/cgroups":                                         "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t0\t140\t1\nmemory\t0\t140\t1\n",
		"sys/fs/cgroup/cgroup.controllers":                     "cpuset cpu io memory pids\n",
		"sys/fs/cgroup/system.slice/memory.current":            "209715200\n",
		"sys/fs/cgroup/system.slice/memory.max":                "max\n",
		"sys/fs/cgroup/system.slice/memory.stat":               v2stat,
		"sys/fs/cgroup/system.slice/memory.events":             "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
		"sys/fs/cgroup/system.slice/db.service/memory.current": "157286400\n",
		"sys/fs/cgroup/system.slice/db.service/memory.max":     "1073741824\n",
		"sys/fs/cgroup/system.slice/db.service/memory.stat":    v2stat,
		"sys/fs/cgroup/user.slice/memory.current":              "1048576\n",
	}
	cases := []struct {
		name, stat     string
		live, dying    float64
		noteContaining string
	}{
		{"6.11+ per-controller counts", "nr_descendants 3\nnr_subsys_memory 4\nnr_dying_descendants 130\nnr_subsys_cpu 4\nnr_dying_subsys_memory 120\nnr_dying_subsys_cpu 2\n", 4, 120, ""},
		{"older kernel: any dying cgroup", "nr_descendants 3\nnr_dying_descendants 130\n", 4, 130, "nr_dying_subsys_memory is absent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t)
			// Replace the v1 layout of the real capture with a v2 one.
			if err := os.RemoveAll(filepath.Join(dir, "sys", "fs", "cgroup")); err != nil {
				t.Fatal(err)
			}
			files := map[string]string{"sys/fs/cgroup/cgroup.stat": c.stat}
			for k, v := range base {
				files[k] = v
			}
			writeFiles(t, dir, files)
			res, err := collectDir(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			s := &res.Snapshot
			if ms := s.Select("memdoctor_cgroup_info"); len(ms) != 1 || ms[0].Labels.Get("mode") != "v2" || ms[0].Labels.Get("memory") != "v2" {
				t.Errorf("cgroup info %+v, want mode v2 memory v2", ms)
			}
			if got := s.Value("memdoctor_memcg_live_cgroups"); got != c.live {
				t.Errorf("live = %v, want %v", got, c.live)
			}
			if got := s.Value("memdoctor_memcg_dying_cgroups"); got != c.dying {
				t.Errorf("dying = %v, want %v", got, c.dying)
			}
			if got := s.Value("memdoctor_cgroup_memory_usage_bytes", "cgroup", "/system.slice/db.service"); got != 157286400 {
				t.Errorf("db.service usage = %v", got)
			}
			if got := s.Value("memdoctor_cgroup_memory_limit_bytes", "cgroup", "/system.slice/db.service"); got != 1073741824 {
				t.Errorf("db.service limit = %v", got)
			}
			if s.Has("memdoctor_cgroup_memory_limit_bytes") && len(s.Select("memdoctor_cgroup_memory_limit_bytes", "cgroup", "/system.slice")) != 0 {
				t.Error("an unlimited cgroup (memory.max = max) must have no limit series")
			}
			if got := s.Value("memdoctor_cgroup_memory_anon_bytes", "cgroup", "/system.slice"); got != 104857600 {
				t.Errorf("system.slice anon = %v", got)
			}
			// usage minus inactive_file (absent here: the whole usage)
			if got := s.Value("memdoctor_cgroup_memory_working_set_bytes", "cgroup", "/system.slice/db.service"); got != 157286400 {
				t.Errorf("db.service working set = %v", got)
			}
			if o := s.Select("memdoctor_cgroup_owner_info", "cgroup", "/system.slice/db.service"); len(o) != 1 || o[0].Labels.Get("unit") != "db.service" || o[0].Labels.Get("kind") != "systemd" {
				t.Errorf("db.service owner %+v", o)
			}
			if got := s.Value("memdoctor_cgroup_memory_stat", "cgroup", "/system.slice", "stat", "slab_unreclaimable"); got != 2 {
				t.Errorf("system.slice slab_unreclaimable = %v", got)
			}
			if got := s.Value("memdoctor_cgroup_memory_events_total", "cgroup", "/system.slice", "event", "oom_kill"); got != 0 || !s.Has("memdoctor_cgroup_memory_events_total") {
				t.Errorf("memory.events not collected")
			}
			found := c.noteContaining == ""
			for _, n := range res.Notes {
				found = found || strings.Contains(n.Message, c.noteContaining)
			}
			if !found {
				t.Errorf("no note containing %q: %+v", c.noteContaining, res.Notes)
			}
		})
	}
}
