package main

// Sandboxed targets come out unharmed: testdata/programs/seccomp_target.c
// puts itself under seccomp (a filter that kills the process on mmap,
// strict mode, a MemoryDenyWriteExecute-like filter that allows what
// malloc does, or one that kills on restart_syscall while its main thread
// sleeps) and waits in read() on its stdin. malloc, trim (dry run and
// --apply) and check --malloc must leave it alive, not stopped, not
// traced, in the state it was in, its read() answering the next line;
// at the end of its input it exits 0, where a process its filter killed
// dies of SIGSYS.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// sandboxed is a running seccomp_target.
type sandboxed struct {
	t     *testing.T
	cmd   *exec.Cmd
	pid   int
	in    io.WriteCloser
	lines chan string
	state string // /proc/PID/status State once it waits in read()
	pings int
}

func startSandboxed(t *testing.T, bin, mode string) *sandboxed {
	t.Helper()
	cmd := exec.Command(bin, mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &sandboxed{t: t, cmd: cmd, pid: cmd.Process.Pid, in: in, lines: make(chan string, 16)}
	t.Cleanup(func() {
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	if l := s.line(); l != fmt.Sprintf("ready %d", s.pid) {
		t.Fatalf("%s target said %q (stderr %q)", mode, l, stderr.String())
	}
	s.waitRead()
	s.state = s.status("State")
	return s
}

func (s *sandboxed) line() string {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			return "(closed)"
		}
		return l
	case <-time.After(10 * time.Second):
		return "(nothing within 10 s)"
	}
}

// waitRead waits until a thread is blocked in read() (and every other in
// a system call).
func (s *sandboxed) waitRead() {
	s.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", s.pid))
		reading, blocked := 0, 0
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			f := strings.Fields(string(b))
			if len(f) > 0 && f[0] == "0" {
				reading++
			}
			if len(f) > 1 {
				blocked++
			}
		}
		if reading == 1 && blocked == len(tasks) {
			return
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid)); err != nil || bytes.Contains(st, []byte(") Z ")) {
			s.t.Fatalf("pid %d died (%v)", s.pid, err)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("pid %d never blocked in read() (%d threads, %d blocked)", s.pid, len(tasks), blocked)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *sandboxed) status(key string) string {
	s.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		s.t.Fatalf("pid %d: %v (it died)", s.pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	s.t.Fatalf("pid %d: no %s in its status", s.pid, key)
	return ""
}

// unharmed fails unless the target is alive, in the state it was in, not
// stopped, not traced, and answers a line through its read().
func (s *sandboxed) unharmed(after string) {
	s.t.Helper()
	// Let go, the thread restarts its read(): it may be seen running
	// for a moment on a busy host.
	s.waitRead()
	if st := s.status("State"); st != s.state {
		s.t.Errorf("after %s: State %q, was %q", after, st, s.state)
	}
	if tr := s.status("TracerPid"); tr != "0" {
		s.t.Errorf("after %s: TracerPid %s", after, tr)
	}
	notStopped(s.t, s.pid)
	s.pings++
	ping := fmt.Sprintf("ping %d", s.pings)
	if _, err := fmt.Fprintln(s.in, ping); err != nil {
		s.t.Fatalf("after %s: writing to pid %d: %v", after, s.pid, err)
	}
	if l := s.line(); l != "echo "+ping {
		s.t.Fatalf("after %s: pid %d answered %q to %q", after, s.pid, l, ping)
	}
	s.waitRead()
}

// finish ends the target's input: it must exit 0, not die of SIGSYS.
func (s *sandboxed) finish() {
	s.t.Helper()
	_ = s.in.Close()
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			s.t.Fatalf("pid %d died of %s", s.pid, ws.Signal())
		}
	}
	if err != nil {
		s.t.Fatalf("pid %d: %v", s.pid, err)
	}
}

func TestSandboxedTargetsUnharmed(t *testing.T) {
	requirePtraceHere(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (apt-get install gcc)")
	}
	src := filepath.Join(repoRoot(t), "testdata", "programs", "seccomp_target.c")
	bin := filepath.Join(t.TempDir(), "seccomp_target")
	if out, err := exec.Command("gcc", "-O1", "-Wall", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	// The same with libseccomp (its library only: the headers need not
	// be installed), for a filter compiled the way container runtimes
	// compile theirs.
	withLib := filepath.Join(t.TempDir(), "seccomp_target_libseccomp")
	libOut, libErr := exec.Command("gcc", "-O1", "-Wall", "-pthread", "-DLIBSECCOMP", "-o", withLib, src, "-l:libseccomp.so.2").CombinedOutput()
	for _, c := range []struct {
		mode string
		// refused: what malloc and trim say; "" when the filter is proven
		// to allow the calls and they run.
		refused []string
	}{
		{"kill-mmap", []string{"seccomp sandbox", "1 seccomp filters", "kill the process (SECCOMP_RET_KILL_PROCESS) on mmap", "nothing was called", "preload"}},
		{"strict", []string{"seccomp sandbox", "strict mode", "preload"}},
		{"mdwe", nil},
		// The main thread sleeps: stopping it would make it resume the
		// sleep through restart_syscall, which kills the process; the
		// reading thread is chosen instead.
		{"sleeper", nil},
		// Exactly the system calls memdoctor declares are allowed, any
		// other kills: the calls, in a thread that never allocated, make
		// no other.
		{"exact", nil},
		// Allowed: read, mmap, futex... with no argument checked;
		// everything not listed fails with EPERM.
		{"container", nil},
	} {
		t.Run(c.mode, func(t *testing.T) {
			bin := bin
			if c.mode == "container" {
				if libErr != nil {
					t.Skipf("libseccomp.so.2 not found (apt-get install libseccomp2): %v\n%s", libErr, libOut)
				}
				bin = withLib
			}
			s := startSandboxed(t, bin, c.mode)
			pid := fmt.Sprint(s.pid)
			for _, args := range [][]string{{"malloc", pid}, {"trim", pid}, {"trim", pid, "--apply"}} {
				start := time.Now()
				out, errOut, code := runMallocCLI(t, args...)
				took := time.Since(start)
				skipDenied(t, errOut)
				name := strings.Replace(strings.Join(args, " "), pid, "PID", 1)
				switch {
				case c.refused == nil && code != 0:
					t.Errorf("%s exited %d: %s", name, code, errOut)
				case c.refused == nil:
					if args[0] == "malloc" && !strings.Contains(out, "arena") {
						t.Errorf("%s printed no arena:\n%s", name, out)
					}
				case code == 0:
					t.Errorf("%s ran on a target its calls would kill:\n%s\n%s", name, out, errOut)
				default:
					for _, w := range c.refused {
						if !strings.Contains(errOut, w) {
							t.Errorf("%s: stderr %q lacks %q", name, errOut, w)
						}
					}
					t.Logf("%s refused in %s: %s", name, took.Round(time.Microsecond), strings.TrimSpace(errOut))
				}
				s.unharmed(name)
			}

			// check chooses its processes itself: a sandboxed one is
			// skipped, without being stopped, and a note says so.
			start := time.Now()
			out, errOut, code := runCLI(t, "check", "--json", "--pid", pid, "--top", "1", "--malloc", "1")
			took := time.Since(start)
			if code != 0 {
				t.Fatalf("check --malloc 1: exit %d: %s", code, errOut)
			}
			var r model.Report
			if err := jsonUnmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			var note string
			for _, n := range r.Notes {
				if n.Source == "malloc_info pid "+pid {
					note = n.Message + " / " + n.Fix
				}
			}
			for _, w := range []string{"seccomp", "skipped without stopping it", "memdoctor malloc " + pid} {
				if !strings.Contains(note, w) {
					t.Errorf("check --malloc 1: the note on pid %s %q lacks %q", pid, note, w)
				}
			}
			if !strings.Contains(errOut, "not reading malloc_info of pid "+pid) || strings.Contains(errOut, "held briefly") {
				t.Errorf("check --malloc 1 said %q, want that it does not read pid %s", errOut, pid)
			}
			t.Logf("check --malloc 1 (whole check) in %s: %s", took.Round(time.Millisecond), note)
			s.unharmed("check --malloc 1")
			s.finish()
		})
	}
}
