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

// holdIn starts a process in cgroup dir (a v1 memory cgroup's directory)
// that then touches mib MiB of anonymous memory and holds it until the
// test ends; it returns the process' pid once the memory is touched.
func holdIn(t testing.TB, dir string, mib int) int {
	t.Helper()
	cmd := exec.Command("python3", "-c", "import sys,time\nsys.stdin.readline()\nb=bytearray("+strconv.Itoa(mib)+"<<20)\nfor i in range(0,len(b),4096): b[i]=1\nprint('ok',flush=True)\ntime.sleep(60)")
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
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	write(t, dir+"/cgroup.procs", strconv.Itoa(cmd.Process.Pid))
	// It allocates once moved, and says when it has.
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Read(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
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
	holdIn(t, leaf, 64)
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

// v2Tree writes memory.current, memory.max and memory.events for each
// cgroup of a fake v2 hierarchy below root/cg.
func v2Tree(t *testing.T, root string, cgs map[string][3]string) {
	t.Helper()
	for cg, f := range cgs {
		dir := filepath.Join(root, "cg", cg)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, dir+"/memory.current", f[0]+"\n")
		write(t, dir+"/memory.max", f[1]+"\n")
		write(t, dir+"/memory.events", f[2])
	}
}

func v2Events(hits, oom, oomKill, high int) string {
	return fmt.Sprintf("low 0\nhigh %d\nmax %d\noom %d\noom_kill %d\noom_group_kill 0\n", high, hits, oom, oomKill)
}

func paths(bs []Brief) string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Path)
	}
	return strings.Join(out, " ")
}

// TestEventHistorySelect: two successive readings of one v2 hierarchy.
// The first selection of a history is the one-shot Select's (counters
// since the cgroups were made); the second takes the cgroups whose
// oom_kill, oom, high or max events rose in between, and not those whose
// events are old. A cgroup removed between the readings leaves the
// history; one made anew under the same path, its counter lower than
// before, rose by its count.
func TestEventHistorySelect(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	quiet := v2Events(0, 0, 0, 0)
	first := map[string][3]string{
		"/big":       {"1000", "max", quiet},
		"/bigger":    {"2000", "max", quiet},
		"/old-kills": {"10", "max", v2Events(9, 5, 5, 0)},
		"/new-kill":  {"11", "max", quiet},
		"/new-oom":   {"12", "max", quiet},
		"/throttled": {"13", "max", v2Events(0, 0, 0, 40)},
		"/hits-max":  {"14", "1000", v2Events(3, 0, 0, 0)},
		"/near":      {"95", "100", quiet},
		"/gone":      {"16", "max", v2Events(0, 2, 2, 0)},
		"/remade":    {"17", "max", v2Events(0, 4, 4, 0)},
		"/idle":      {"18", "max", quiet},
	}
	v2Tree(t, root, first)
	r := Reader{FS: procfs.NewFS(root), Root: "cg"}
	h := NewEventHistory()
	read := func() []Brief {
		t.Helper()
		briefs, _, capped := r.Scan(100)
		if capped {
			t.Fatal("scan capped")
		}
		return briefs
	}
	b1 := read()
	if got, want := paths(h.Select(b1, 2, 20)), paths(Select(b1, 2, 20)); got != want {
		t.Errorf("first selection of a history = %s, want the one-shot Select's %s", got, want)
	}
	if got, want := paths(Select(b1, 2, 20)), "/bigger /big /near /old-kills /remade /gone /throttled"; got != want {
		t.Errorf("one-shot Select = %s, want %s", got, want)
	}
	// /old-kills, /hits-max and /remade's predecessor each hold an entry;
	// /big, /idle and the others without events hold none.
	if h.Len() != 5 {
		t.Errorf("history holds %d cgroups after the first reading, want 5 (those with an event)", h.Len())
	}

	// Between the readings: a kill in /new-kill, an OOM invocation
	// without a kill in /new-oom, more breaches in /throttled, more limit
	// hits in /hits-max; /gone removed; /remade removed and made anew (its
	// counter restarts, lower than before).
	if err := os.RemoveAll(filepath.Join(root, "cg", "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "cg", "remade")); err != nil {
		t.Fatal(err)
	}
	v2Tree(t, root, map[string][3]string{
		"/new-kill":  {"11", "max", v2Events(1, 1, 1, 0)},
		"/new-oom":   {"12", "max", v2Events(1, 1, 0, 0)},
		"/throttled": {"13", "max", v2Events(0, 0, 0, 43)},
		"/hits-max":  {"14", "1000", v2Events(7, 0, 0, 0)},
		"/remade":    {"17", "max", v2Events(0, 1, 1, 0)},
	})
	b2 := read()
	got := paths(h.Select(b2, 2, 20))
	// Nearest first (/hits-max has a limit, far from it), then by new
	// kills, new OOMs, new breaches, new hits.
	if want := "/bigger /big /near /hits-max /new-kill /remade /new-oom /throttled"; got != want {
		t.Errorf("second selection = %s, want %s", got, want)
	}
	if strings.Contains(got, "/old-kills") {
		t.Error("a cgroup whose kills are all older than the previous reading was selected again")
	}
	// The one-shot Select of the same reading still takes every cgroup
	// with kills or breaches since made: check's view.
	if got, want := paths(Select(b2, 2, 20)), "/bigger /big /near /old-kills /remade /new-kill /throttled"; got != want {
		t.Errorf("one-shot Select of the second reading = %s, want %s", got, want)
	}
	// /gone is forgotten; the others with events are held.
	if h.Len() != 6 {
		t.Errorf("history holds %d cgroups after the second reading, want 6", h.Len())
	}
	if _, ok := h.prev["/gone"]; ok {
		t.Error("a removed cgroup stays in the history")
	}
	// A third reading with nothing new: only the top and the near one.
	if got, want := paths(h.Select(read(), 2, 20)), "/bigger /big /near"; got != want {
		t.Errorf("third selection, no new events = %s, want %s", got, want)
	}
	// Bounded as the one-shot selection is.
	v2Tree(t, root, map[string][3]string{"/throttled": {"13", "max", v2Events(0, 0, 0, 44)}})
	if got, want := paths(h.Select(read(), 1, 2)), "/bigger /near /throttled"; got != want {
		t.Errorf("bounded selection = %s, want %s", got, want)
	}
	var nilHist *EventHistory
	if got, want := paths(nilHist.Select(b2, 2, 20)), paths(Select(b2, 2, 20)); got != want {
		t.Errorf("a nil history selects %s, want the one-shot %s", got, want)
	}
}

// TestEventHistoryFailcntV1Real: on a real v1 memory cgroup, writing a
// file four times its limit makes the kernel hit the limit (memory.failcnt,
// the "max" event) and reclaim the page cache. With the file removed, the
// cgroup is far from its limit: a history that reads failcnt selects it
// once, at the reading after the hits, and not again; a Reader without
// Failcnt reads no count.
func TestEventHistoryFailcntV1Real(t *testing.T) {
	dir := testParent(t)
	leaf := dir + "/writer"
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, leaf+"/memory.limit_in_bytes", strconv.Itoa(8<<20))
	r := hostReader()
	r.Root = strings.TrimPrefix(dir, "/")
	r.Failcnt = true
	h := NewEventHistory()
	scan := func() []Brief {
		t.Helper()
		bs, _, _ := r.Scan(10)
		return bs
	}
	if got := paths(h.Select(scan(), 0, 10)); got != "" {
		t.Fatalf("an idle cgroup was selected: %s", got)
	}
	data := filepath.Join(t.TempDir(), "data")
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec dd if=/dev/zero of=%s bs=1M count=32 status=none", leaf, data)
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("dd in the cgroup: %v: %s", err, out)
	}
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	bs := scan()
	var b Brief
	for _, x := range bs {
		if x.Path == "/writer" {
			b = x
		}
	}
	if b.MaxEvents <= 0 || b.OOMKills != 0 {
		t.Fatalf("after writing 32 MiB through an 8 MiB limit: %+v, want failcnt > 0 and no kill", b)
	}
	if s := share(b); s >= NearShare {
		t.Fatalf("usage %d of %d after the file was removed: the cgroup is still near its limit", b.Usage, b.Limit)
	}
	if got := paths(h.Select(bs, 0, 10)); got != "/writer" {
		t.Errorf("the reading after the limit hits selects %q, want /writer", got)
	}
	if got := paths(h.Select(scan(), 0, 10)); got != "" {
		t.Errorf("a reading with no new hits selects %q", got)
	}
	if got := paths(Select(bs, 0, 10)); got != "" {
		t.Errorf("the one-shot selection takes limit hits since made: %q", got)
	}
	r.Failcnt = false
	if b, _ := r.Brief("/writer"); b.MaxEvents != 0 {
		t.Errorf("failcnt read without Reader.Failcnt: %+v", b)
	}
}

// TestHeadroomReal: the headroom of a process is the least room left under
// its cgroup's limit and its parent's, read through the host's files.
func TestHeadroomReal(t *testing.T) {
	dir := testParent(t)
	leaf := dir + "/leaf"
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, leaf+"/memory.limit_in_bytes", strconv.Itoa(256<<20))
	pid := holdIn(t, leaf, 64)
	fs := procfs.NewFS("/")
	usage := func(d string) int64 {
		b, err := os.ReadFile(d + "/memory.usage_in_bytes")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return v
	}
	h, limited, err := Headroom(fs, pid)
	if err != nil || !limited {
		t.Fatalf("headroom %d, limited %v, %v: want the leaf's limit seen", h, limited, err)
	}
	// Usage moves a little between the two reads (the interpreter's own
	// pages): a MiB of tolerance.
	if want := 256<<20 - usage(leaf); h < want-1<<20 || h > want+1<<20 || h > 192<<20 {
		t.Errorf("headroom %d under the leaf's limit, want about %d (256 MiB less its usage)", h, want)
	}
	// A tighter parent decides.
	write(t, dir+"/memory.limit_in_bytes", strconv.Itoa(96<<20))
	h, limited, err = Headroom(fs, pid)
	if want := 96<<20 - usage(dir); err != nil || !limited || h < want-1<<20 || h > want+1<<20 || h > 32<<20 {
		t.Errorf("headroom %d (limited %v, %v) under the parent's 96 MiB, want about %d", h, limited, err, want)
	}
	if _, _, err := Headroom(fs, 1<<30); err == nil {
		t.Errorf("a process that does not exist: no error")
	}
}
