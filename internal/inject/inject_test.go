//go:build linux && amd64

package inject

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

func TestCanaryStateOffsets(t *testing.T) {
	var st canaryState
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"gpr", unsafe.Offsetof(st.gpr), 32},
		{"gprAfter", unsafe.Offsetof(st.gprAfter), 136},
		{"mxcsr", unsafe.Offsetof(st.mxcsr), 240},
		{"mxcsrAfter", unsafe.Offsetof(st.mxcsrAfter), 244},
		{"ret", unsafe.Offsetof(st.ret), 248},
		{"k", unsafe.Offsetof(st.k), 256},
		{"kAfter", unsafe.Offsetof(st.kAfter), 320},
		{"vec", unsafe.Offsetof(st.vec), 384},
		{"vecAfter", unsafe.Offsetof(st.vecAfter), 384 + 32*64},
	} {
		if c.got != c.want {
			t.Errorf("canaryState.%s at %d, canary_amd64.s uses %d", c.name, c.got, c.want)
		}
	}
}

func TestCanary(t *testing.T) {
	requirePtrace(t)
	if err := Canary(); err != nil {
		t.Fatal(err)
	}
	t.Log(CanaryReport())
}

// A single-threaded glibc program blocked in clock_nanosleep: the call
// returns its pid, and its sleep then ends normally, on time.
func TestCallIntoSleep(t *testing.T) {
	requirePtrace(t)
	cmd := exec.Command("sleep", "1")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	waitSyscall(t, pid, pid, 230)
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := Resolve(pid, maps, "getpid")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Attach(pid, pid, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stop()
	got, err := s.Call(context.Background(), "getpid", syms["getpid"])
	if derr := s.Detach(); derr != nil {
		t.Fatal(derr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if int(got) != pid {
		t.Errorf("getpid() = %d in pid %d", got, pid)
	}
	t.Logf("stopped in syscall %d restart %v; call %s, held %s", st.Syscall, st.Restart, s.Calls[0].Duration, s.Held)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sleep after the call: %v", err)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("sleep 1 ended after %s", el)
	}
}

func waitSyscall(t *testing.T, pid, tid, nr int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := ThreadSyscall(pid, tid); n == nr {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d of pid %d never blocked in syscall %d", tid, pid, nr)
		}
		time.Sleep(time.Millisecond)
	}
}

func requirePtrace(t *testing.T) {
	t.Helper()
	if err := exec.Command("true").Run(); err != nil {
		t.Skip(err)
	}
}

// The canary is not blind: the two ways gdb 13 fails on AVX-512/AMX CPUs,
// reproduced on purpose, are both caught.
func TestCanarySeesBrokenRestore(t *testing.T) {
	requirePtrace(t)
	for _, c := range []struct{ brk, want string }{
		{"xstate", "registers changed"},
		{"restart", "returned -516"},
	} {
		t.Run(c.brk, func(t *testing.T) {
			testBreak = c.brk
			defer func() { testBreak = "" }()
			report, err := runCanary(60 * time.Millisecond)
			t.Log(report)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("broken %s restore: canary said %v, want %q", c.brk, err, c.want)
			}
			t.Log(err)
		})
	}
}

// A canary whose sleep ends before memdoctor sees it (a loaded host) is a
// miss, told apart from a failure and found quickly, so Canary can try
// again with a longer sleep instead of refusing every process.
func TestCanaryMissedSleepIsNotAFailure(t *testing.T) {
	requirePtrace(t)
	missed := 0
	for i := 0; i < 5; i++ {
		start := time.Now()
		_, err := runCanary(time.Millisecond)
		switch {
		case err == nil:
		case errors.Is(err, errMissedSleep):
			missed++
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("a missed sleep took %s to notice", d)
			}
		default:
			t.Errorf("1 ms canary: %v", err)
		}
	}
	t.Logf("1 ms sleeps missed: %d of 5", missed)
}
