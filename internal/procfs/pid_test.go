package procfs

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// statLine is pid 4242's stat line, fields 3 to 52 (after the name) as the
// kernel prints them, for a name that is the process' own choice.
func statLine(comm string) string {
	return "4242 (" + comm + ") S 17 4242 4242 0 -1 4194560 120 0 0 0 7 3 0 0 20 0 1 0 98765 5484544 403 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
}

func TestParsePIDStat(t *testing.T) {
	t.Parallel()
	want := PIDStat{State: 'S', PPID: 17, Flags: 4194560, UTimeTicks: 7, STimeTicks: 3, StartTimeTicks: 98765}
	// A name may hold blanks, parentheses and what looks like fields.
	for _, comm := range []string{"bash", "a b", ") R 1 2 3 (", "x) Z 9 (y", ""} {
		got, err := ParsePIDStat([]byte(statLine(comm)), "proc/4242/stat")
		if err != nil {
			t.Errorf("name %q: %v", comm, err)
			continue
		}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("name %q (-got +want):\n%s", comm, diff)
		}
	}
	for _, bad := range []string{"", "1 (a) b", "1 (a S 1 2", "1 (a) S x 1 1 0 -1 4 0 0 0 0 7 3 0 0 20 0 1 0 9", "1 (a) S 1 1 1 0 -1 4 0 0 0 0 7 3 0 0 20 0 1 0"} {
		if _, err := ParsePIDStat([]byte(bad), "proc/1/stat"); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
}

// The live files: this process' own, and a child's, whose parent and
// start are known.
func TestLivePIDStat(t *testing.T) {
	t.Parallel()
	fs := Live()
	self, err := fs.SelfStat()
	if err != nil {
		t.Fatal(err)
	}
	// proc/self/stat is the main thread's, which may sleep while a test
	// runs on another.
	if self.PPID != os.Getppid() || self.UTimeTicks+self.STimeTicks > 1<<40 {
		t.Errorf("self: ppid %d, CPU %d+%d ticks, want ppid %d", self.PPID, self.UTimeTicks, self.STimeTicks, os.Getppid())
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	st, err := fs.ProcStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != os.Getpid() || st.StartTimeTicks < self.StartTimeTicks {
		t.Errorf("child: ppid %d, start %d, want %d and at least %d", st.PPID, st.StartTimeTicks, os.Getpid(), self.StartTimeTicks)
	}
	tids, err := fs.TIDs(cmd.Process.Pid)
	if err != nil || len(tids) != 1 || tids[0] != cmd.Process.Pid {
		t.Fatalf("child's threads %v, %v: want its one thread", tids, err)
	}
	// sleep blocks in clock_nanosleep (or nanosleep) once it runs.
	var sc Syscall
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ts, err := fs.TaskStat(cmd.Process.Pid, tids[0]); err == nil && ts.State == 'S' {
			if sc, err = fs.TaskSyscall(cmd.Process.Pid, tids[0]); err == nil && sc.Nr >= 0 {
				break
			}
		}
	}
	if sc.Nr < 0 || sc.Running || !sc.Full {
		t.Errorf("a sleeping child's syscall: %+v, want a call with its arguments", sc)
	}
	status, err := fs.TaskStatus(cmd.Process.Pid, tids[0])
	if err != nil || status.Text["Name"] != "sleep" {
		t.Errorf("task status: name %q, %v", status.Text["Name"], err)
	}
	if _, err := fs.ProcStat(1 << 30); !IsNotExist(err) {
		t.Errorf("a pid that does not exist: %v", err)
	}
}

func TestParseSyscall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Syscall
	}{
		{"202 0x7f12 0x80 0x0 0x0 0x0 0x0 0x7ffd 0x7f34\n", Syscall{Nr: 202, Args: [6]uint64{0x7f12, 0x80}, Full: true}},
		{"running\n", Syscall{Nr: -1, Running: true}},
		{"-1 0x7ffd 0x7f34\n", Syscall{Nr: -1}},
		{"", Syscall{Nr: -1}},
		{"x 1 2", Syscall{Nr: -1}},
		{"7 0x1 0x2", Syscall{Nr: 7}},
	} {
		if diff := cmp.Diff(ParseSyscall([]byte(c.in)), c.want); diff != "" {
			t.Errorf("%q (-got +want):\n%s", c.in, diff)
		}
	}
}

// A real process' environment, as exec laid it out: a variable set twice
// (getenv finds the first), an empty one, one never asked for, and the
// arena cap.
func TestProcEnviron(t *testing.T) {
	t.Parallel()
	env := []string{"SECRET=hunter2", "MEMDOCTOR_STATS=/tmp/a.%p", "MEMDOCTOR_STATS=/tmp/b", "EMPTY=", "GLIBC_TUNABLES=glibc.malloc.arena_max=3"}
	// os.StartProcess passes the environment as it is (exec.Cmd would
	// drop the duplicate).
	p, err := os.StartProcess("/bin/sleep", []string{"sleep", "30"}, &os.ProcAttr{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Kill(); _, _ = p.Wait() }()
	var got Environ
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		// The environment is the child's once it has exec'd.
		if got, err = Live().ProcEnviron(p.Pid, "MEMDOCTOR_STATS", "EMPTY", "UNSET"); err == nil && len(got.Vars) > 0 {
			break
		}
	}
	want := Environ{Vars: map[string]string{"MEMDOCTOR_STATS": "/tmp/a.%p", "EMPTY": ""}, ArenaMax: 3, ArenaMaxFrom: "GLIBC_TUNABLES=glibc.malloc.arena_max", ArenaMaxSet: true}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("ProcEnviron (-got +want):\n%s", diff)
	}
	if _, err := Live().ProcEnviron(1<<30, "X"); !IsNotExist(err) {
		t.Errorf("a pid that does not exist: %v", err)
	}
}

// An environment past environMax (a process that moved its end) is read
// to the bound, and the entry the bound cuts is dropped, not kept short.
func TestProcEnvironBound(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString("A=1\x00")
	b.WriteString("PAD=" + strings.Repeat("x", environMax-len("A=1\x00PAD=")-len("\x00B=2\x00")) + "\x00")
	b.WriteString("B=2\x00") // ends exactly at the bound
	b.WriteString("C=" + strings.Repeat("y", 100) + "\x00")
	fs := NewFSFrom(fstest.MapFS{"proc/7/environ": {Data: b.Bytes()}}, 4096)
	got, err := fs.ProcEnviron(7, "A", "B", "C")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.Vars, map[string]string{"A": "1", "B": "2"}); diff != "" {
		t.Errorf("at the bound (-got +want):\n%s", diff)
	}
	// One byte less: B is cut, so it is dropped.
	fs = NewFSFrom(fstest.MapFS{"proc/7/environ": {Data: append([]byte("Z"), b.Bytes()...)}}, 4096)
	if got, err = fs.ProcEnviron(7, "A", "B", "C"); err != nil || got.Vars["B"] != "" || len(got.Vars) != 0 {
		t.Errorf("past the bound: %v, %v; want nothing (the first entry is ZA=1)", got.Vars, err)
	}
}

func FuzzParsePIDStat(f *testing.F) {
	f.Add([]byte(statLine("a) b")))
	f.Add([]byte("1 (a) S"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParsePIDStat(data, "stat")
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if st.State == 0 || st.PPID < 0 {
			t.Fatalf("%q parsed to %+v", data, st)
		}
	})
}

func FuzzParseEnviron(f *testing.F) {
	f.Add([]byte("A=1\x00A=2\x00B=\x00GLIBC_TUNABLES=glibc.malloc.arena_max=2\x00"))
	f.Add([]byte("A"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e := ParseEnviron(data, "A", "B")
		for k, v := range e.Vars {
			if !bytes.Contains(data, []byte(k+"="+v)) {
				t.Fatalf("%s=%s is not in %q", k, v, data)
			}
		}
	})
}
