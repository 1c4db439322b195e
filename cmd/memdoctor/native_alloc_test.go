package main

// Processes whose malloc is not glibc's: Debian's redis-server (linked
// with jemalloc) after deleting two thirds of its keys, and a program that
// fragments or retains, linked with jemalloc, or run with jemalloc or
// tcmalloc in LD_PRELOAD. check --malloc reads their allocator's own
// figures and judges them by native_allocator_retention, never by glibc's
// empty main arena, with that allocator's remedies (never the allocator
// they run, nor a setting they have); malloc shows those figures (Redis'
// own INFO agrees), trim --apply purges (RSS and the memory cgroup's
// charge fall), and trim's dry run says when there is nothing to give.

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// nativeFinding runs check --malloc on pid and checks what it says of
// it: its allocator named in the table and JSON, no glibc finding or
// remedy, and native_allocator_retention (returned, nil when quiet).
func nativeFinding(t *testing.T, pid int, want string) *model.Finding {
	t.Helper()
	spid := strconv.Itoa(pid)
	r := checkJSON(t, "--malloc", "5", "--pid", spid)
	var seen *model.Process
	for i := range r.Processes {
		if r.Processes[i].PID == pid {
			seen = &r.Processes[i]
		}
	}
	if seen == nil {
		t.Fatalf("pid %d is not in the process table", pid)
	}
	if seen.Allocator != want {
		t.Errorf("pid %d: allocator %q in JSON, want %q", pid, seen.Allocator, want)
	}
	if seen.Malloc == nil || seen.Malloc.InUseBytes <= 0 || seen.Malloc.SystemBytes < seen.Malloc.InUseBytes {
		t.Errorf("pid %d (%s): check --malloc did not read its allocator: %+v (notes %+v)", pid, want, seen.Malloc, r.Notes)
	}
	var ret *model.Finding
	for i, f := range r.Findings {
		if !strings.Contains(f.Subject, "(pid "+spid+")") {
			continue
		}
		if f.ID == "allocator_hoarding" || f.ID == "malloc_arenas_many" {
			t.Errorf("pid %d (%s) judged by glibc's figures: %s: %s", pid, want, f.ID, f.Summary)
		}
		for _, rem := range f.Remedies {
			for _, c := range rem.Commands {
				if strings.Contains(c, "lib"+want) {
					t.Errorf("pid %d runs %s and is advised it: %s", pid, want, c)
				}
			}
		}
		if f.ID == "native_allocator_retention" {
			ret = &r.Findings[i]
		}
	}
	out, _, _ := runCLI(t, "check", "--pid", spid)
	if !strings.Contains(out, want) {
		t.Errorf("the process table does not name %s:\n%s", want, out)
	}
	return ret
}

// remedyCommands joins a finding's commands, one a line.
func remedyCommands(f *model.Finding) string {
	var l []string
	for _, r := range f.Remedies {
		l = append(l, r.Commands...)
	}
	return strings.Join(l, "\n")
}

// memoryCgroup makes a memory cgroup for one test and returns its
// directory and the file of its charge.
func memoryCgroup(t *testing.T) (dir, charge string) {
	t.Helper()
	requireLinuxRoot(t)
	root, v2 := memoryHierarchy(t)
	dir, err := os.MkdirTemp(root, "memdoctor-native-test-")
	if err != nil {
		t.Skipf("cannot make a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond) // its processes are still exiting
		}
	})
	if v2 {
		return dir, filepath.Join(dir, "memory.current")
	}
	return dir, filepath.Join(dir, "memory.usage_in_bytes")
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// infoField reads one integer field of Redis' INFO.
func infoField(t *testing.T, info, name string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %q", name, v)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s", name)
	return 0
}

// inReadings reports whether v lies within [min(a,b), max(a,b)] widened by
// frac of it.
func inReadings(v, a, b int64, frac float64) bool {
	lo, hi := min(a, b), max(a, b)
	return float64(v) >= float64(lo)*(1-frac) && float64(v) <= float64(hi)*(1+frac)
}

func TestNativeAllocatorRedis(t *testing.T) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (scripts/install-test-deps.sh)")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (scripts/install-test-deps.sh)")
	}
	cg, charge := memoryCgroup(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	// Started inside its own memory cgroup, so that its charge is its own.
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", cg,
		server, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command(cli, "-p", port, "shutdown", "nosave").Run()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	redis := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for i := 0; ; i++ {
		if out, _ := exec.Command(cli, "-p", port, "ping").Output(); strings.TrimSpace(string(out)) == "PONG" {
			break
		}
		if i == 100 {
			t.Fatal("redis-server does not answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid, spid := cmd.Process.Pid, strconv.Itoa(cmd.Process.Pid)
	// 200k keys of 1 KB, then the first two thirds deleted: whole pages
	// free, which jemalloc keeps dirty until they decay.
	redis("eval", "for i=1,200000 do redis.call('set', 'k'..i, string.rep('x', 1000)) end", "0")
	redis("eval", "for i=1,133333 do redis.call('del', 'k'..i) end", "0")
	info1 := redis("info", "memory")
	out, errOut, code := runCLI(t, "malloc", "--json", spid)
	info2 := redis("info", "memory")
	if code != 0 {
		t.Fatalf("malloc %d exited %d: %s", pid, code, errOut)
	}
	var rep struct {
		Allocator string `json:"allocator"`
		Native    *struct {
			Allocated int64  `json:"allocated_bytes"`
			Active    *int64 `json:"active_bytes"`
			Resident  int64  `json:"resident_bytes"`
			Free      int64  `json:"free_resident_bytes"`
			BgOn      *bool  `json:"background_thread"`
		} `json:"native"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Native == nil || rep.Native.Active == nil {
		t.Fatalf("malloc --json: %v\n%s", err, out)
	}
	n := rep.Native
	t.Logf("redis before: %s", grepLines(info1, "used_memory:", "used_memory_rss:", "allocator_allocated:", "allocator_active:", "allocator_resident:", "mem_fragmentation_ratio:"))
	t.Logf("memdoctor malloc: allocated %d active %d resident %d free pages %d", n.Allocated, *n.Active, n.Resident, n.Free)
	t.Logf("redis after: %s", grepLines(info2, "allocator_allocated:", "allocator_active:", "allocator_resident:"))
	// Redis' own INFO reads the same mallctl figures: memdoctor's lie
	// between its two readings, within 3% (Redis allocates between them).
	for _, c := range []struct {
		name string
		got  int64
	}{{"allocator_allocated", n.Allocated}, {"allocator_active", *n.Active}, {"allocator_resident", n.Resident}} {
		if a, b := infoField(t, info1, c.name), infoField(t, info2, c.name); !inReadings(c.got, a, b, 0.03) {
			t.Errorf("%s: memdoctor read %d, Redis' INFO says %d and %d", c.name, c.got, a, b)
		}
	}
	if rep.Allocator != "jemalloc" || n.BgOn == nil || !*n.BgOn {
		t.Errorf("allocator %q, background threads %v: Redis runs jemalloc and turns its background threads on", rep.Allocator, n.BgOn)
	}
	if n.Free < 64<<20 {
		t.Errorf("only %d bytes of free pages after deleting 133k keys of 1 KB", n.Free)
	}
	// trim --apply purges: RSS and the cgroup's charge fall.
	chargeBefore := readInt(t, charge)
	out, errOut, code = runCLI(t, "trim", "--apply", "--json", spid)
	chargeAfter := readInt(t, charge)
	if code != 0 {
		t.Fatalf("trim --apply exited %d: %s", code, errOut)
	}
	var res struct {
		RSS       struct{ Before, After, Diff int64 } `json:"rss"`
		Allocator string                              `json:"allocator"`
		Call      string                              `json:"call"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("trim --json: %v\n%s", err, out)
	}
	t.Logf("trim --apply: %s: RSS %d -> %d MiB; cgroup charge %d -> %d MiB", res.Call, res.RSS.Before>>20, res.RSS.After>>20, chargeBefore>>20, chargeAfter>>20)
	if res.Allocator != "jemalloc" || !strings.Contains(res.Call, "purge") || res.RSS.Diff < 48<<20 || chargeBefore-chargeAfter < 48<<20 {
		t.Errorf("trim --apply gave back %d bytes of RSS and %d of the cgroup's charge, want 48 MiB or more of each: %s", res.RSS.Diff, chargeBefore-chargeAfter, out)
	}
	if pong := strings.TrimSpace(redis("ping")); pong != "PONG" {
		t.Errorf("redis after the trim: %q", pong)
	}
	// 200k more keys, two of every three deleted: the survivors keep
	// most pages partly used, which Redis' INFO calls fragmentation.
	redis("eval", "for i=200001,400000 do redis.call('set', 'k'..i, string.rep('x', 1000)) end", "0")
	redis("eval", "for i=200001,400000 do if i%3~=0 then redis.call('del', 'k'..i) end end", "0")
	t.Logf("redis fragmented: %s", grepLines(redis("info", "memory"), "used_memory:", "used_memory_rss:", "allocator_resident:", "mem_fragmentation_ratio:"))
	f := nativeFinding(t, pid, "jemalloc")
	if f == nil {
		t.Fatalf("check --malloc: no native_allocator_retention for redis-server")
	}
	cmds := remedyCommands(f)
	t.Logf("finding: %s\n%s", f.Summary, cmds)
	if strings.Contains(cmds, "background_thread") || !strings.Contains(cmds, "MALLOC_CONF=dirty_decay_ms:1000") || !strings.Contains(cmds, "activedefrag") {
		t.Errorf("remedies for Redis (background threads on, decay 10 s, fragmented): %s", cmds)
	}
}

func grepLines(s string, prefixes ...string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	return strings.Join(out, " ")
}

func TestNativeAllocatorPrograms(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	lib := "/usr/lib/x86_64-linux-gnu/"
	if _, err := os.Stat(lib); err != nil {
		lib = "/usr/lib/aarch64-linux-gnu/"
	}
	je, tc := lib+"libjemalloc.so.2", lib+"libtcmalloc_minimal.so.4"
	src := filepath.Join(repoRoot(t), "testdata", "programs", "retain.c")
	dir := t.TempDir()
	build := func(name string, args ...string) string {
		bin := filepath.Join(dir, name)
		if out, err := exec.Command("gcc", append([]string{"-O1", "-o", bin, src}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		return bin
	}
	for _, c := range []struct {
		name, want, lib string
		linked          bool
		pattern         string
		fires           bool
		remedy          string
	}{
		{"linked jemalloc", "jemalloc", je, true, "interleave", true, "MALLOC_CONF=background_thread:true,dirty_decay_ms:1000"},
		{"preloaded jemalloc", "jemalloc", je, false, "block", true, "MALLOC_CONF=background_thread:true,dirty_decay_ms:1000"},
		{"preloaded tcmalloc", "tcmalloc", tc, false, "block", true, "TCMALLOC_RELEASE_RATE=10"},
		{"healthy jemalloc", "jemalloc", je, false, "keep", false, ""},
		{"healthy tcmalloc", "tcmalloc", tc, false, "keep", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.lib); err != nil {
				t.Skipf("%s not installed (scripts/install-test-deps.sh)", c.lib)
			}
			var cmd *exec.Cmd
			if c.linked {
				cmd = exec.Command(build("retain-"+c.want, c.lib), "400", c.pattern)
			} else {
				cmd = exec.Command(build("retain"), "400", c.pattern)
				cmd.Env = append(os.Environ(), "LD_PRELOAD="+c.lib)
			}
			stdin, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
				t.Fatalf("not ready: %v", err)
			}
			pid := cmd.Process.Pid
			f := nativeFinding(t, pid, c.want)
			switch {
			case c.fires && f == nil:
				t.Fatalf("check --malloc: no native_allocator_retention for %s", c.name)
			case !c.fires && f != nil:
				t.Fatalf("a healthy %s process: %s", c.want, f.Summary)
			case f != nil:
				cmds := remedyCommands(f)
				t.Logf("%s: %s\n%s", c.name, f.Summary, cmds)
				if !strings.Contains(cmds, c.remedy) {
					t.Errorf("remedies lack %q: %s", c.remedy, cmds)
				}
				if (c.pattern == "block") != strings.Contains(cmds, "trim "+strconv.Itoa(pid)+" --apply") {
					t.Errorf("a purge offered %v for free pages in pattern %s: %s", c.pattern != "block", c.pattern, cmds)
				}
			}
			// malloc prints the allocator's own table, trim its dry run.
			mout, errOut, code := runCLI(t, "malloc", strconv.Itoa(pid))
			if code != 0 || !strings.Contains(mout, c.want) || !strings.Contains(mout, "allocated") || strings.Contains(mout, "arena  ") {
				t.Errorf("malloc %d (%s) exited %d:\n%s%s", pid, c.want, code, mout, errOut)
			}
			tout, errOut, code := runCLI(t, "trim", strconv.Itoa(pid))
			offers := strings.Contains(tout, "--apply\n")
			if code != 0 || offers != (c.pattern == "block") || !offers && !strings.Contains(tout, "nothing to offer") {
				t.Errorf("trim %d (%s, %s) exited %d:\n%s%s", pid, c.want, c.pattern, code, tout, errOut)
			}
		})
	}
}
