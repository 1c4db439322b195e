package cgroups

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

const v1Mount = "/sys/fs/cgroup/memory"

// testParent makes a uniquely named v1 memory cgroup for the test and
// removes it (and what the test made below it) at the end. It skips where
// the v1 memory controller is not writable.
func testParent(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make memory cgroups")
	}
	if _, err := os.Stat(v1Mount + "/memory.usage_in_bytes"); err != nil {
		t.Skip("no cgroup v1 memory hierarchy")
	}
	name := fmt.Sprintf("memdoctor-cgtest-%d-%d", os.Getpid(), time.Now().UnixNano())
	dir := filepath.Join(v1Mount, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup: %v", err)
	}
	t.Cleanup(func() { removeTree(dir) })
	return dir
}

// removeTree removes a cgroup subtree, deepest first, killing what is left in it.
func removeTree(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if b, err := os.ReadFile(dirs[i] + "/cgroup.procs"); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					p, _ := os.FindProcess(pid)
					_ = p.Kill()
				}
			}
		}
		for try := 0; try < 50; try++ {
			if err := os.Remove(dirs[i]); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func write(t testing.TB, file, s string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func hostReader() Reader {
	return Reader{FS: procfs.NewFS("/"), Root: strings.TrimPrefix(v1Mount, "/"), V1: true}
}

// TestReadV1Real: a cgroup the test makes, with a limit and a process that
// holds 64 MiB of anonymous memory, read through the v1 files.
func TestReadV1Real(t *testing.T) {
	dir := testParent(t)
	leaf := dir + "/leaf"
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, leaf+"/memory.limit_in_bytes", strconv.Itoa(256<<20))
	cmd := exec.Command("python3", "-c", "import sys,time\nb=bytearray(64<<20)\nfor i in range(0,len(b),4096): b[i]=1\nprint('ok',flush=True)\ntime.sleep(60)")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	write(t, leaf+"/cgroup.procs", strconv.Itoa(cmd.Process.Pid))
	// The allocation happens after the move: wait for the process to say so.
	buf := make([]byte, 3)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	r := hostReader()
	cg := strings.TrimPrefix(leaf, v1Mount)
	m, ok := r.Read(cg)
	if !ok {
		t.Fatalf("Read(%s) failed", cg)
	}
	if m.Max != 256<<20 {
		t.Errorf("max = %d, want %d", m.Max, 256<<20)
	}
	if m.Usage < 64<<20 || m.Usage > 256<<20 {
		t.Errorf("usage = %d, want 64..256 MiB", m.Usage)
	}
	if a := m.Stat["anon"]; a < 60<<20 {
		t.Errorf("anon = %d, want at least 60 MiB (stat %v)", a, m.Stat)
	}
	if ws := m.WorkingSet(); ws < m.Stat["anon"] || ws > m.Usage {
		t.Errorf("working set %d not between anon %d and usage %d", ws, m.Stat["anon"], m.Usage)
	}
	for _, k := range []string{"usage", "max", "peak", "stat", "events"} {
		if !m.Has[k] {
			t.Errorf("%s not read: %v", k, m.Has)
		}
	}
	if _, ok := m.Events["oom_kill"]; !ok {
		t.Errorf("no oom_kill event from memory.oom_control: %v", m.Events)
	}
	// The parent's usage counts the leaf's (page counters are exact;
	// memory.stat may lag a flush behind, so it is not compared).
	p, ok := r.Read(strings.TrimPrefix(dir, v1Mount))
	if !ok || p.Usage < m.Usage {
		t.Errorf("parent usage %d below the leaf's %d", p.Usage, m.Usage)
	}
	b, ok := r.Brief(cg)
	if !ok || b.Limit != m.Max || b.Usage <= 0 {
		t.Errorf("brief %+v, memory max %d", b, m.Max)
	}
	if b, ok := r.Brief(strings.TrimPrefix(dir, v1Mount)); !ok || b.Limit != Unlimited {
		t.Errorf("the parent has no limit: brief %+v", b)
	}
}

// TestReadV2Files: the v2 layout cannot run here (memory is bound to v1),
// so one cgroup's files are laid out as the kernel prints them.
func TestReadV2Files(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{
		"cg/app.service/memory.current":      "209715200\n",
		"cg/app.service/memory.max":          "268435456\n",
		"cg/app.service/memory.high":         "max\n",
		"cg/app.service/memory.low":          "0\n",
		"cg/app.service/memory.min":          "0\n",
		"cg/app.service/memory.peak":         "230686720\n",
		"cg/app.service/memory.swap.current": "0\n",
		"cg/app.service/memory.swap.max":     "max\n",
		"cg/app.service/memory.stat":         "anon 150000000\nfile 50000000\nactive_file 20000000\ninactive_file 30000000\nkernel 4000000\nslab 3000000\nsock 0\nshmem 0\nfile_mapped 1000\nfile_dirty 0\nworkingset_refault_file 12\n",
		"cg/app.service/memory.events":       "low 0\nhigh 0\nmax 17\noom 2\noom_kill 2\noom_group_kill 0\n",
		"cg/app.service/memory.events.local": "low 0\nhigh 0\nmax 17\noom 2\noom_kill 1\noom_group_kill 0\n",
		"cg/app.service/memory.pressure":     "some avg10=1.50 avg60=0.50 avg300=0.10 total=123456\nfull avg10=1.00 avg60=0.25 avg300=0.05 total=65432\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, p, content)
	}
	r := Reader{FS: procfs.NewFS(root), Root: "cg"}
	m, ok := r.Read("/app.service")
	if !ok {
		t.Fatal("not read")
	}
	if m.Max != 268435456 || m.High != Unlimited || m.Peak != 230686720 || m.SwapMax != Unlimited {
		t.Errorf("limits %+v", m)
	}
	if got := m.WorkingSet(); got != 209715200-30000000 {
		t.Errorf("working set %d", got)
	}
	if m.Events["oom_kill"] != 2 || m.EventsLocal["oom_kill"] != 1 || m.Stat["workingset_refault_file"] != 12 {
		t.Errorf("events %v local %v stat %v", m.Events, m.EventsLocal, m.Stat)
	}
	if !m.Pressure.HasFull || m.Pressure.Some.Avg10 != 1.5 || m.Pressure.Full.TotalMicros != 65432 {
		t.Errorf("pressure %+v", m.Pressure)
	}
	// Hostile: the stat file replaced by a FIFO must not block.
	if err := os.Remove(filepath.Join(root, "cg/app.service/memory.stat")); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("mkfifo", filepath.Join(root, "cg/app.service/memory.stat")).Run(); err != nil {
		t.Fatal(err)
	}
	done := make(chan Memory, 1)
	go func() { m, _ := r.Read("/app.service"); done <- m }()
	select {
	case m := <-done:
		if m.Has["stat"] {
			t.Error("a FIFO was read as memory.stat")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked on a FIFO")
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	all := []Brief{
		{Path: "/", Usage: 1 << 40, Limit: Unlimited},
		{Path: "/big", Usage: 900, Limit: Unlimited},
		{Path: "/bigger", Usage: 1000, Limit: Unlimited},
		{Path: "/small-near", Usage: 95, Limit: 100},
		{Path: "/small-at", Usage: 100, Limit: 100},
		{Path: "/small-far", Usage: 50, Limit: 100},
		{Path: "/killed", Usage: 1, Limit: Unlimited, OOMKills: 3},
		{Path: "/throttled", Usage: 2, Limit: Unlimited, HighEvents: 40},
	}
	var got []string
	for _, b := range Select(all, 2, 10) {
		got = append(got, b.Path)
	}
	want := "/bigger /big /small-at /small-near /killed /throttled"
	if strings.Join(got, " ") != want {
		t.Errorf("Select = %v, want %s", got, want)
	}
	got = got[:0]
	for _, b := range Select(all, 1, 1) {
		got = append(got, b.Path)
	}
	if strings.Join(got, " ") != "/bigger /small-at" {
		t.Errorf("Select bounded = %v", got)
	}
}
