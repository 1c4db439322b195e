package malloc

// The test workload testdata/programs/alloc_workload.c, built by the tests
// (dynamic, gcc -O1 -g) and driven through its stdin.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/inject"
)

var (
	buildDir  string
	buildOnce sync.Once
	buildErr  error
	builds    sync.Map // name -> path
	buildMu   sync.Mutex
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// build compiles testdata/programs/alloc_workload.c once per variant.
func build(t testing.TB, static bool) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (apt-get install gcc)")
	}
	buildOnce.Do(func() { buildDir, buildErr = os.MkdirTemp("", "memdoctor-malloc-test-") })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	name := "alloc_workload"
	args := []string{"-O1", "-g"}
	if static {
		name += "-static"
		args = append(args, "-static")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := builds.Load(name); ok {
		return p.(string)
	}
	bin := filepath.Join(buildDir, name)
	src := filepath.Join("..", "..", "testdata", "programs", "alloc_workload.c")
	args = append(args, "-o", bin, src, "-lpthread")
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
	builds.Store(name, bin)
	return bin
}

// wstats is the workload's "ready" line: its own mallinfo2 and VmRSS.
type wstats struct {
	PID      int   `json:"pid"`
	Arena    int64 `json:"arena"`
	Uordblks int64 `json:"uordblks"`
	Fordblks int64 `json:"fordblks"`
	Hblkhd   int64 `json:"hblkhd"`
	Keepcost int64 `json:"keepcost"`
	RSSKB    int64 `json:"rss_kb"`
	Ops      int64 `json:"ops"`
	// Java's MallocTarget knows what it freed and kept.
	Freed int64 `json:"freed"`
	Kept  int64 `json:"kept"`
}

type workload struct {
	t     testing.TB
	pid   int
	in    io.WriteCloser
	lines chan string
	ready wstats
}

// startWorkload starts alloc_workload ARGS... and waits for "ready".
func startWorkload(t testing.TB, static bool, env []string, args ...string) *workload {
	t.Helper()
	bin := build(t, static)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return startCmd(t, cmd)
}

// startCmd starts a program that speaks the workload's line protocol
// ("ready {JSON}" on stdout, commands on stdin) and waits for "ready".
func startCmd(t testing.TB, cmd *exec.Cmd) *workload {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workload{t: t, pid: cmd.Process.Pid, in: in, lines: make(chan string, 16)}
	go func() {
		r := bufio.NewReader(out)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				close(w.lines)
				return
			}
			w.lines <- l
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	w.ready = w.read(2 * time.Minute)
	return w
}

func (w *workload) read(timeout time.Duration) wstats {
	w.t.Helper()
	select {
	case l, ok := <-w.lines:
		if !ok {
			w.t.Fatalf("workload %d exited", w.pid)
		}
		js, found := strings.CutPrefix(strings.TrimSpace(l), "ready ")
		var s wstats
		if !found || json.Unmarshal([]byte(js), &s) != nil {
			w.t.Fatalf("workload printed %q", l)
		}
		return s
	case <-time.After(timeout):
		w.t.Fatalf("workload %d did not answer within %s", w.pid, timeout)
	}
	return wstats{}
}

// do sends a command ("info", "more") and returns the answer.
func (w *workload) do(cmd string) wstats {
	w.t.Helper()
	if _, err := fmt.Fprintln(w.in, cmd); err != nil {
		w.t.Fatalf("workload %d: %v", w.pid, err)
	}
	return w.read(2 * time.Minute)
}

// checkRunning fails when any thread of pid is stopped or traced.
func checkRunning(t *testing.T, pid int) {
	t.Helper()
	states, err := taskStates(pid)
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	for tid, st := range states {
		if st == 'T' || st == 't' {
			t.Errorf("pid %d thread %d left in state %c", pid, tid, st)
		}
	}
	if tr := tracerOf(pid, pid); tr != 0 {
		t.Errorf("pid %d still traced by %d", pid, tr)
	}
	if stopPending(pid) {
		t.Errorf("pid %d has a SIGSTOP pending", pid)
	}
}

// requirePtrace skips where calling into processes cannot work here.
func requirePtrace(t *testing.T) {
	t.Helper()
	if !inject.Supported {
		t.Skip("calling into processes is implemented for x86-64 only")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		v := strings.TrimSpace(string(b))
		if v == "3" || v == "2" && os.Geteuid() != 0 {
			t.Skipf("ptrace not permitted: kernel.yama.ptrace_scope=%s", v)
		}
	}
}

// skipIfPtraceDenied turns a refused attach into a skip.
func skipIfPtraceDenied(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrPtraceDenied) {
		t.Skipf("ptrace not permitted here: %v", err)
	}
}
