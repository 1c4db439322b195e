//go:build linux && amd64

package inject

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// buildIntegrity compiles testdata/programs/inject_integrity.c.
func buildIntegrity(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	bin := filepath.Join(t.TempDir(), "inject_integrity")
	src := filepath.Join("..", "..", "testdata", "programs", "inject_integrity.c")
	if out, err := exec.Command("gcc", "-O2", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// A signal that reaches the thread while memdoctor waits for its interrupt
// stop clears the pending interrupt (any ptrace stop does): the interrupt
// must be asked for again, or a thread running in user mode never stops.
// Here a thread in a user-mode loop gets a queued signal every ~50 µs
// while it is attached to 300 times; every attach must stop it promptly,
// and every signal must reach it.
func TestAttachUnderSignalFlood(t *testing.T) {
	requirePtrace(t)
	bin := buildIntegrity(t)
	cmd := exec.Command(bin)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("no ready line")
	}
	var ready struct {
		TIDs map[string]int `json:"tids"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "ready ")), &ready); err != nil {
		t.Fatal(err)
	}
	pid, tid := cmd.Process.Pid, ready.TIDs["vector"]
	stop := make(chan struct{})
	sent := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				sent <- n
				return
			default:
			}
			if syscall.Tgkill(pid, tid, syscall.Signal(35)) == nil {
				n++
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	var slowest time.Duration
	for i := 0; i < 300; i++ {
		start := time.Now()
		_, err := With(pid, tid, Options{Timeout: 500 * time.Millisecond}, func(*Session) error { return nil })
		if err != nil {
			close(stop)
			<-sent
			t.Fatalf("attach %d: %v", i, err)
		}
		slowest = max(slowest, time.Since(start))
	}
	close(stop)
	n := <-sent
	time.Sleep(50 * time.Millisecond)
	fmt.Fprintln(in, "exit")
	var st struct {
		Errors  int `json:"errors"`
		Signals struct {
			RT1 map[string]int `json:"rt1"`
		} `json:"signals"`
	}
	if !sc.Scan() || json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "status ")), &st) != nil {
		t.Fatalf("final status %q", sc.Text())
	}
	t.Logf("300 attaches under %d signals: slowest %s; the thread received %d", n, slowest, st.Signals.RT1["vector"])
	if st.Signals.RT1["vector"] != n || st.Errors != 0 {
		t.Errorf("sent %d signals, the thread received %d; errors %d", n, st.Signals.RT1["vector"], st.Errors)
	}
}

// The integrity target (testdata/programs/inject_integrity.c, also used by
// internal/malloc's thousand-session test) is not blind either: a session
// that does not write the extended state back, after a call that uses the
// vector registers (explicit_bzero: glibc's memset), is reported by the
// target itself; the same calls with the restore intact are not.
func TestBrokenRestoreIsSeenByTheTarget(t *testing.T) {
	requirePtrace(t)
	bin := buildIntegrity(t)
	for _, c := range []struct {
		brk    string
		errors bool
	}{{"", false}, {"xstate", true}} {
		t.Run("break="+c.brk, func(t *testing.T) {
			cmd := exec.Command(bin)
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			sc := bufio.NewScanner(out)
			read := func(prefix string) string {
				if !sc.Scan() || !strings.HasPrefix(sc.Text(), prefix+" ") {
					t.Fatalf("target said %q", sc.Text())
				}
				return strings.TrimPrefix(sc.Text(), prefix+" ")
			}
			var ready struct {
				TIDs map[string]int `json:"tids"`
			}
			if err := json.Unmarshal([]byte(read("ready")), &ready); err != nil {
				t.Fatal(err)
			}
			pid, tid := cmd.Process.Pid, ready.TIDs["sleep"]
			waitSyscall(t, pid, tid, 230)
			maps, err := procfs.NewFS("/").ProcMaps(pid)
			if err != nil {
				t.Fatal(err)
			}
			fn, err := Resolve(pid, maps, "mmap", "explicit_bzero", "munmap")
			if err != nil {
				t.Fatal(err)
			}
			testBreak = c.brk
			defer func() { testBreak = "" }()
			ctx := context.Background()
			_, err = With(pid, tid, Options{}, func(s *Session) error {
				buf, err := s.Call(ctx, "mmap", fn["mmap"], 0, 1<<16, 3, 0x22, ^uint64(0), 0)
				if err != nil {
					return err
				}
				if _, err := s.Call(ctx, "explicit_bzero", fn["explicit_bzero"], buf, 1<<16); err != nil {
					return err
				}
				_, err = s.Call(ctx, "munmap", fn["munmap"], buf, 1<<16)
				return err
			})
			testBreak = ""
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(60 * time.Millisecond) // the sleep ends and is checked
			fmt.Fprintln(in, "exit")
			var st struct {
				Errors     int    `json:"errors"`
				FirstError string `json:"first_error"`
			}
			if err := json.Unmarshal([]byte(read("status")), &st); err != nil {
				t.Fatal(err)
			}
			t.Logf("break %q: the target counted %d errors (%s)", c.brk, st.Errors, st.FirstError)
			if (st.Errors > 0) != c.errors || c.errors && !strings.Contains(st.FirstError, "sleep: vector register") {
				t.Errorf("break %q: target errors %d %q", c.brk, st.Errors, st.FirstError)
			}
		})
	}
}
