package main

// `memdoctor malloc` on the allocation workload (testdata/programs/
// alloc_workload.c, built dynamic here): text, JSON and XML, refusals.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// runMallocCLI runs memdoctor in-process with malloc and trim registered
// (added here when main.go does not register them yet).
func runMallocCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	root := newRoot(&o, &e)
	have := map[string]bool{}
	for _, c := range root.Commands() {
		have[c.Name()] = true
	}
	for _, c := range []*cobra.Command{newMallocCmd(), newTrimCmd()} {
		if !have[c.Name()] {
			root.AddCommand(c)
		}
	}
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		_, _ = fmt.Fprintln(&e, "memdoctor:", err)
		return o.String(), e.String(), 1
	}
	return o.String(), e.String(), 0
}

// allocWorkload is a running testdata/programs/alloc_workload.
type allocWorkload struct {
	t   *testing.T
	pid int
	in  io.Writer
	out *bufio.Reader
}

// workloadReady is its "ready" line: its own mallinfo2 and VmRSS.
type workloadReady struct {
	PID      int   `json:"pid"`
	Arena    int64 `json:"arena"`
	Uordblks int64 `json:"uordblks"`
	Fordblks int64 `json:"fordblks"`
	RSSKB    int64 `json:"rss_kb"`
	Ops      int64 `json:"ops"`
}

// startAllocWorkload builds alloc_workload (gcc -O1 -g, dynamic unless
// static) and starts it with args; it returns once the workload is ready.
func startAllocWorkload(t *testing.T, static bool, args ...string) *allocWorkload {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (apt-get install gcc)")
	}
	src := filepath.Join(repoRoot(t), "testdata", "programs", "alloc_workload.c")
	flags, name := []string{"-O1", "-g", "-lpthread"}, "alloc_workload-g"
	if static {
		flags, name = append([]string{"-static"}, flags...), name+"-static"
	}
	bin := buildOnce(t, name, func(dir string) (string, error) {
		return gcc(filepath.Join(dir, "alloc_workload"), src, flags...)
	})
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	w := &allocWorkload{t: t, pid: cmd.Process.Pid, in: in, out: bufio.NewReader(out)}
	w.read()
	return w
}

func (w *allocWorkload) read() workloadReady {
	w.t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := w.out.ReadString('\n')
		ch <- res{l, err}
	}()
	select {
	case r := <-ch:
		js, ok := strings.CutPrefix(strings.TrimSpace(r.line), "ready ")
		var s workloadReady
		if r.err != nil || !ok || json.Unmarshal([]byte(js), &s) != nil {
			w.t.Fatalf("workload: %q, %v", r.line, r.err)
		}
		return s
	case <-time.After(2 * time.Minute):
		w.t.Fatal("workload did not answer")
	}
	return workloadReady{}
}

// do sends "info" or "more" and returns the answer.
func (w *allocWorkload) do(cmd string) workloadReady {
	w.t.Helper()
	if _, err := fmt.Fprintln(w.in, cmd); err != nil {
		w.t.Fatal(err)
	}
	return w.read()
}

// notStopped fails when a thread of pid is stopped or traced.
func notStopped(t *testing.T, pid int) {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name()))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if st := b[i+2]; st == 'T' || st == 't' {
			t.Errorf("pid %d thread %s left in state %c", pid, e.Name(), st)
		}
	}
}

func requirePtraceHere(t *testing.T) {
	t.Helper()
	requireLinuxRoot(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("calling into processes is implemented for x86-64 only")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) == "3" {
		t.Skip("ptrace disabled: kernel.yama.ptrace_scope=3")
	}
}

// skipDenied skips when the kernel or a container refused ptrace.
func skipDenied(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "ptrace denied") {
		t.Skipf("ptrace not permitted here: %s", stderr)
	}
}

func TestMallocCommand(t *testing.T) {
	requirePtraceHere(t)
	w := startAllocWorkload(t, false, "hoard", "8", "64")
	pid := fmt.Sprint(w.pid)

	out, errOut, code := runMallocCLI(t, "malloc", pid, "--mallinfo2")
	skipDenied(t, errOut)
	if code != 0 {
		t.Fatalf("malloc exited %d: %s", code, errOut)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	for _, want := range []string{"read through ptrace", "arena", "system", "largest free", "retained", "total", "9 arenas", "mallinfo2:", "memdoctor trim " + pid} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
	for _, want := range []string{"holding one thread of pid " + pid + " briefly", "was held", "ran throughout"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	notStopped(t, w.pid)

	out, errOut, code = runMallocCLI(t, "malloc", pid, "--json")
	if code != 0 {
		t.Fatalf("malloc --json exited %d: %s", code, errOut)
	}
	var j struct {
		Arenas []map[string]any           `json:"arenas"`
		Totals map[string]json.RawMessage `json:"totals"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("malloc --json: %v", err)
	}
	if len(j.Arenas) != 9 {
		t.Errorf("%d arenas in JSON", len(j.Arenas))
	}
	for _, k := range []string{"system_bytes", "in_use_bytes", "free_bytes", "retained_bytes", "mmap_bytes", "arena_count"} {
		if _, ok := j.Totals[k]; !ok {
			t.Errorf("totals lack %q: %v", k, j.Totals)
		}
	}
	var retained int64
	if err := json.Unmarshal(j.Totals["retained_bytes"], &retained); err != nil || retained < 300<<20 {
		t.Errorf("retained_bytes %s: want most of the 8 × 64 MiB hoard", j.Totals["retained_bytes"])
	}

	out, _, code = runMallocCLI(t, "malloc", pid, "--xml")
	if code != 0 || !strings.HasPrefix(out, "<malloc version=\"1\">") || !strings.HasSuffix(out, "</malloc>\n") {
		t.Errorf("malloc --xml exited %d: %.80q", code, out)
	}
	w.do("more")
	notStopped(t, w.pid)
}

func TestMallocRefusals(t *testing.T) {
	requirePtraceHere(t)
	static := startAllocWorkload(t, true, "healthy", "1", "1")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"malloc", "1"}, "refusing PID 1"},
		{[]string{"trim", "1"}, "refusing PID 1"},
		{[]string{"trim", "1", "--apply"}, "refusing PID 1"},
		{[]string{"malloc", "abc"}, "want a process id"},
		{[]string{"malloc", fmt.Sprint(gone.Process.Pid)}, "no such process"},
		{[]string{"malloc", fmt.Sprint(static.pid)}, "statically linked"},
		{[]string{"trim", fmt.Sprint(static.pid), "--apply"}, "no libc.so.6"},
		{[]string{"malloc", fmt.Sprint(static.pid), "--method", "preload"}, "not a glibc process"},
		{[]string{"malloc", "2", "--method", "magic"}, "want auto, ptrace or preload"},
	} {
		out, errOut, code := runMallocCLI(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to say %q (stdout %q)", c.args, code, errOut, c.want, out)
		}
	}
	notStopped(t, static.pid)
}

// As another user, without root, memdoctor refuses (run as uid 65534).
func TestMallocOtherUserRefused(t *testing.T) {
	requirePtraceHere(t)
	w := startAllocWorkload(t, false, "healthy", "1", "1")
	bin := binary(t)
	if out, err := exec.Command(bin, "malloc", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "malloc PID") {
		t.Skip("main.go does not register the malloc command yet (root.AddCommand(newMallocCmd(), newTrimCmd()))")
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"malloc", fmt.Sprint(w.pid)}, {"trim", fmt.Sprint(w.pid), "--apply"}} {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "process of another user") || !strings.Contains(string(out), "as root") {
			t.Errorf("%v as uid 65534: %v\n%s", args, err, out)
		}
	}
	notStopped(t, w.pid)
}
