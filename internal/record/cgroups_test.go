package record

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// TestTickReadsCgroupsWithNewEvents: a recorder over a cgroup v2 host
// tree the test writes (twelve large cgroups, more than the ten a tick
// reads by size, and two small ones with OOM kills) reads in full, at
// each tick, the small cgroups whose kills rose since the tick before:
// at the first tick those with any kill (as check does), then only the
// one killed again; kills long past are not read again, and a cgroup
// removed between ticks is not read and leaves no trace.
func TestTickReadsCgroupsWithNewEvents(t *testing.T) {
	root := t.TempDir()
	meminfo, err := os.ReadFile(filepath.Join("..", "procfs", "testdata", "host", "proc", "meminfo"))
	if err != nil {
		t.Fatal(err)
	}
	put := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("proc/meminfo", string(meminfo))
	put("proc/self/mountinfo", "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n")
	put("sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n")
	cgroup := func(cg string, usage int, kills int) {
		t.Helper()
		d := "sys/fs/cgroup/" + cg + "/"
		put(d+"memory.current", fmt.Sprintf("%d\n", usage))
		put(d+"memory.max", "max\n")
		put(d+"memory.stat", "anon 4096\nfile 0\ninactive_file 0\n")
		put(d+"memory.events", fmt.Sprintf("low 0\nhigh 0\nmax %d\noom %d\noom_kill %d\noom_group_kill 0\n", kills, kills, kills))
	}
	for i := range 12 {
		cgroup(fmt.Sprintf("big%02d.service", i), (100+i)<<20, 0)
	}
	cgroup("old-kills.service", 1<<20, 3)
	cgroup("killed.service", 1<<20, 1)
	cgroup("gone.service", 1<<20, 2)

	fs := procfs.NewFS(root)
	r, err := New(Config{DBPath: filepath.Join(t.TempDir(), "md.db"), Interval: time.Minute, FS: &fs, Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := func() []string {
		t.Helper()
		var small []string
		for _, m := range r.latest.Select("memdoctor_cgroup_memory_usage_bytes") {
			if p := m.Labels.Get("cgroup"); !strings.HasPrefix(p, "/big") {
				small = append(small, p)
			}
		}
		slices.Sort(small)
		return small
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r.Tick(t0)
	if r.latest == nil {
		t.Fatal("the first tick collected nothing")
	}
	if got := len(r.latest.Select("memdoctor_cgroup_memory_usage_bytes")); got != 13 {
		t.Errorf("first tick read %d cgroups in full, want 10 by size and 3 with kills", got)
	}
	if got, want := read(), []string{"/gone.service", "/killed.service", "/old-kills.service"}; !slices.Equal(got, want) {
		t.Errorf("first tick read %v beyond the largest, want every cgroup with kills %v", got, want)
	}

	cgroup("killed.service", 1<<20, 2)
	if err := os.RemoveAll(filepath.Join(root, "sys/fs/cgroup/gone.service")); err != nil {
		t.Fatal(err)
	}
	r.Tick(t0.Add(time.Minute))
	if got, want := read(), []string{"/killed.service"}; !slices.Equal(got, want) {
		t.Errorf("second tick read %v beyond the largest, want only the cgroup killed since the first %v", got, want)
	}
	if got := r.latest.Value("memdoctor_cgroup_memory_events_total", "cgroup", "/killed.service", "event", "oom_kill"); got != 2 {
		t.Errorf("killed.service oom_kill = %v, want 2", got)
	}
	if n := r.cgEvents.Len(); n != 2 {
		t.Errorf("the recorder remembers %d cgroups' events, want 2 (the removed one forgotten)", n)
	}

	r.Tick(t0.Add(2 * time.Minute))
	if got := read(); len(got) != 0 {
		t.Errorf("third tick, no new events, read %v beyond the largest", got)
	}
}
