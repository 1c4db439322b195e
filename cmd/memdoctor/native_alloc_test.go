package main

// Processes whose malloc is not glibc's: Debian's redis-server (linked
// with jemalloc) after deleting two thirds of its keys, and a program that
// fragments and retains, linked with jemalloc, or run with jemalloc or
// tcmalloc in LD_PRELOAD. check --malloc must not judge them by glibc's
// empty main arena nor advise them the allocator they run, the process
// table and JSON name their allocator, and malloc and trim say plainly
// what they cannot do.

import (
	"bufio"
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

// checkNative runs check --malloc on pid and checks what it says of it.
func checkNative(t *testing.T, pid int, want string) {
	t.Helper()
	r := checkJSON(t, "--malloc", "5", "--top", "40")
	spid := strconv.Itoa(pid)
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
	for _, f := range r.Findings {
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
	}
	var noted bool
	for _, n := range r.Notes {
		if strings.Contains(n.Message, "(pid "+spid+") allocates with "+want) {
			noted = true
		}
	}
	if !noted {
		t.Errorf("no note says pid %d allocates with %s: %+v", pid, want, r.Notes)
	}
	out, _, _ := runCLI(t, "check", "--pid", spid)
	if !strings.Contains(out, want) {
		t.Errorf("the process table does not name %s:\n%s", want, out)
	}
	for _, cmd := range []string{"malloc", "trim"} {
		out, errOut, code := runCLI(t, cmd, spid)
		if code == 0 || strings.Contains(out+errOut, "--apply") || strings.Contains(out, "arena") ||
			!strings.Contains(errOut, "allocates with "+want) || !strings.Contains(errOut, "not supported yet") {
			t.Errorf("%s %d (%s) exited %d:\n%s%s", cmd, pid, want, code, out, errOut)
		}
	}
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	cmd := exec.Command(server, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
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
	// 300k keys of 1 KB, then two of every three deleted: jemalloc keeps
	// most of the pages (Redis' own fragmentation ratio near 3).
	redis("eval", "for i=1,300000 do redis.call('set', 'k'..i, string.rep('x', 1000)) end", "0")
	redis("eval", "for i=1,300000 do if i%3~=0 then redis.call('del', 'k'..i) end end", "0")
	info := redis("info", "memory")
	t.Logf("redis: %s", strings.Join(strings.Fields(grepLines(info, "used_memory:", "used_memory_rss:", "mem_fragmentation_ratio:")), " "))
	checkNative(t, cmd.Process.Pid, "jemalloc")
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
	}{
		{"linked jemalloc", "jemalloc", je, true},
		{"preloaded jemalloc", "jemalloc", je, false},
		{"preloaded tcmalloc", "tcmalloc", tc, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.lib); err != nil {
				t.Skipf("%s not installed (scripts/install-test-deps.sh)", c.lib)
			}
			var cmd *exec.Cmd
			if c.linked {
				cmd = exec.Command(build("retain-"+c.want, c.lib), "400")
			} else {
				cmd = exec.Command(build("retain"), "400")
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
			checkNative(t, cmd.Process.Pid, c.want)
		})
	}
}
