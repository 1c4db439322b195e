package leaktrace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]uint64{"512KiB": 512 << 10, "64k": 64 << 10, "1MiB": 1 << 20, "2m": 2 << 20, "4096": 4096, " 100b ": 100} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5k", "5GiB", "k", "512KB"} {
		if got, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %d, want an error", in, got)
		}
	}
}

// Each sample stands for 1/q blocks and n/q bytes, q the chance that a
// block of n bytes is sampled at the rate; blocks in use also count as
// allocated; samples without a stack are one stack with no frames.
func TestBuildDumpScales(t *testing.T) {
	const rate = 1 << 16
	q := func(n float64) float64 { return 1 - math.Exp(-n/rate) }
	allocs := []sampleRec{{size: 100, stack: 1}, {size: 1 << 20, stack: 1}, {size: 4096, stack: 2}, {size: 10, stack: -17}}
	live := []sampleRec{{size: 1 << 20, stack: 1}, {size: 4096, stack: 3}}
	stacks := map[int64][]uint64{1: {0x10, 0x20}, 2: {0x30}, 3: {0x40, 0x50, 0x60}}
	d := buildDump(42, rate, time.Unix(5, 0), 4, 1, allocs, live, func(id int64) []uint64 { return stacks[id] }, nil)
	if d.PID != 42 || d.Rate != rate || d.Samples != 4 || d.Live != 2 || d.Dropped != 1 || len(d.Stacks) != 4 {
		t.Fatalf("dump %+v", d)
	}
	byFirst := map[uint64]int{}
	for i, s := range d.Stacks {
		if len(s.PCs) == 0 {
			byFirst[0] = i
		} else {
			byFirst[s.PCs[0]] = i
		}
	}
	near := func(got int64, want float64) bool { return math.Abs(float64(got)-want) <= 1 }
	s1 := d.Stacks[byFirst[0x10]]
	if !near(s1.AllocObjects, 1/q(100)+1/q(1<<20)) || !near(s1.AllocBytes, 100/q(100)+(1<<20)/q(1<<20)) ||
		!near(s1.InUseObjects, 1/q(1<<20)) || !near(s1.InUseBytes, (1<<20)/q(1<<20)) {
		t.Errorf("stack 1: %+v", s1)
	}
	if s2 := d.Stacks[byFirst[0x30]]; s2.InUseBytes != 0 || !near(s2.AllocBytes, 4096/q(4096)) {
		t.Errorf("stack 2 (freed): %+v", s2)
	}
	if s3 := d.Stacks[byFirst[0x40]]; !near(s3.InUseBytes, 4096/q(4096)) || s3.AllocBytes != s3.InUseBytes {
		t.Errorf("stack 3 (in use, its event not read): %+v", s3)
	}
	if s := d.Stacks[byFirst[0]]; len(s.PCs) != 0 || !near(s.AllocBytes, 10/q(10)) {
		t.Errorf("the stack not kept: %+v", s)
	}
}

// The options are bounded before anything is loaded.
func TestRunBounds(t *testing.T) {
	for _, o := range []Options{{PID: os.Getpid()}, {PID: os.Getpid(), Duration: MaxDuration + time.Second}, {Duration: time.Second}} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("Run(%+v): want an error", o)
		}
	}
}

// A static program has no libc to probe: the error says to use the
// preload library.
func TestRunStaticProgram(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "idle.c")
	if err := os.WriteFile(src, []byte("#include <unistd.h>\nint main(void){ char c; return read(0, &c, 1) < 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "idle")
	if out, err := exec.Command("gcc", "-static", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("no static libc to link with: %v\n%s", err, out)
	}
	pid, stop := startIdle(t, exec.Command(bin))
	defer stop()
	_, err := Run(context.Background(), Options{PID: pid, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "no glibc") || !strings.Contains(err.Error(), "MEMDOCTOR_PROFILE") {
		t.Errorf("Run on a static program: %v", err)
	}
}

// startIdle starts cmd waiting on its stdin, after it has mapped what it
// maps (its exec is done).
func startIdle(t *testing.T, cmd *exec.Cmd) (int, func()) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exe, _ := filepath.EvalSymlinks(cmd.Path)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid)); l == exe {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never ran %s", cmd.Process.Pid, exe)
		}
	}
	time.Sleep(50 * time.Millisecond) // the dynamic loader's mappings
	return cmd.Process.Pid, func() { _ = in.Close(); _ = cmd.Wait() }
}

// Without privileges the probes cannot load: ErrUnavailable, and the
// message says to use MEMDOCTOR_PROFILE.
func TestRunUnprivileged(t *testing.T) {
	if pid := os.Getenv("LEAKTRACE_TEST_PID"); pid != "" {
		n, _ := strconv.Atoi(pid)
		_, err := Run(context.Background(), Options{PID: n, Duration: time.Second})
		fmt.Printf("unavailable=%v error=%v\n", errors.Is(err, ErrUnavailable), err)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a helper as another user")
	}
	// The test binary, where user nobody may run it.
	dir, err := os.MkdirTemp("", "leaktrace")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "leaktrace.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	target := exec.Command("/bin/cat")
	target.SysProcAttr = nobody
	pid, stop := startIdle(t, target)
	defer stop()
	helper := exec.Command(bin, "-test.run=^TestRunUnprivileged$", "-test.count=1")
	helper.Env = append(os.Environ(), "LEAKTRACE_TEST_PID="+strconv.Itoa(pid))
	helper.SysProcAttr = nobody
	out, err := helper.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "unavailable=true") || !strings.Contains(string(out), "MEMDOCTOR_PROFILE=512KiB") {
		t.Errorf("as nobody: %s", out)
	}
	for l := range strings.Lines(string(out)) {
		if strings.HasPrefix(l, "unavailable=") {
			t.Logf("as nobody: %s", l)
		}
	}
}

// An allocation function pays its entry and its return; free its entry;
// a stepped entry costs a stepped hit; the CPU share is their sum over the
// window.
func TestEstimate(t *testing.T) {
	e := Estimate{ProbeHit: time.Microsecond, ProbeStep: 10 * time.Microsecond, Window: time.Second,
		Functions: []FuncEstimate{{Name: "malloc", Calls: 1000}, {Name: "free", Calls: 500, Stepped: true}}}
	e.estimate(map[string]bool{"malloc": true})
	if m, f := e.Functions[0].PerCall, e.Functions[1].PerCall; m != 11*time.Microsecond || f != 10*time.Microsecond {
		t.Errorf("per call: malloc %s, free %s", m, f)
	}
	if want := (1000*11e-6 + 500*10e-6) / 1; math.Abs(e.CPUShare-want) > 1e-9 {
		t.Errorf("CPU share %g, want %g", e.CPUShare, want)
	}
	var b strings.Builder
	e.Text(&b)
	if !strings.Contains(b.String(), "free") || !strings.Contains(b.String(), "+11µs a call") {
		t.Errorf("text:\n%s", b.String())
	}
}

// probeFDs counts this process' perf event and BPF descriptors.
func probeFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if l == "anon_inode:[perf_event]" || strings.HasPrefix(l, "anon_inode:bpf") {
			n++
		}
	}
	return n
}

// Cancelling (Ctrl-C) ends the trace at once with its result, and every
// probe and program is released.
func TestRunCancelled(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/sys/bus/event_source/devices/uprobe"); err != nil {
		t.Skip("no uprobe events in this kernel")
	}
	pid, stop := startIdle(t, exec.Command("/bin/cat"))
	defer stop()
	fds := probeFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var during int
	var est Estimate
	began := time.Now()
	res, err := Run(ctx, Options{PID: pid, Duration: 5 * time.Minute, Count: 200 * time.Millisecond,
		Estimate: func(e Estimate) error { est = e; return nil },
		Started:  func() { during = probeFDs(t); cancel() }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ended != "cancelled" || time.Since(began) > time.Minute {
		t.Errorf("ended %q after %s", res.Ended, time.Since(began))
	}
	if during <= fds {
		t.Errorf("%d perf event/BPF descriptors while sampling, %d before", during, fds)
	}
	if n := probeFDs(t); n != fds {
		t.Errorf("%d perf event/BPF descriptors after, %d before", n, fds)
	}
	if est.ProbeHit <= 0 || len(est.Functions) == 0 || est.Functions[0].Name != "malloc" {
		t.Errorf("estimate %+v", est)
	}
}
