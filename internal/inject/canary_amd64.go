//go:build linux && amd64

package inject

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// The canary is memdoctor itself, started again with canaryEnv set: its
// main thread (the process' first thread; the Go runtime adds others, and
// two more are blocked in read and epoll_wait) loads known values into its
// registers and sleeps in clock_nanosleep. The parent seizes that thread,
// calls canaryTarget in it (which overwrites every register), restores and
// detaches. The child then checks, right after the system call returns,
// that the sleep ended normally (0, not EINTR or a -ERESTART* code, and not
// early) and that every register holds what it held before.

const canaryEnv = "MEMDOCTOR_INJECT_CANARY"

// canaryState is shared with canary_amd64.s; the offsets are listed there.
type canaryState struct {
	save       [4]uint64 //nolint:unused // written by canary_amd64.s
	gpr        [8]uint64
	_          [5]uint64
	gprAfter   [12]uint64
	_          [1]uint64
	mxcsr      uint32
	mxcsrAfter uint32
	ret        int64
	k          [8]uint64
	kAfter     [8]uint64
	vec        [32 * 64]byte
	vecAfter   [32 * 64]byte
}

func canarySleep(ts *unix.Timespec, st *canaryState, level int64) int64
func canaryTarget() //nolint:unused // called by the parent through its address (canary_amd64.s)
func canaryTargetAddr() uintptr

// vectorLevel is what the canary exercises: 2 AVX-512 (zmm0-31, k0-7),
// 1 AVX (ymm0-15), 0 SSE (xmm0-15).
func vectorLevel() int64 {
	switch {
	case cpu.X86.HasAVX512F:
		return 2
	case cpu.X86.HasAVX:
		return 1
	}
	return 0
}

func init() {
	if v, ok := os.LookupEnv(canaryEnv); ok {
		os.Exit(canaryChild(v))
	}
}

// canaryChild is the child's side; it returns the exit status.
func canaryChild(arg string) int {
	runtime.LockOSThread()
	ms, err := strconv.Atoi(arg)
	if err != nil || ms <= 0 || ms > 10000 {
		fmt.Fprintf(os.Stderr, "canary: bad %s=%q\n", canaryEnv, arg)
		return 2
	}
	// Two more threads, blocked in other system calls.
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err == nil {
		go func() {
			runtime.LockOSThread()
			var b [1]byte
			_, _ = unix.Read(p[0], b[:])
		}()
	}
	if ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC); err == nil {
		go func() {
			runtime.LockOSThread()
			var ev [1]unix.EpollEvent
			_, _ = unix.EpollWait(ep, ev[:], -1)
		}()
	}
	level := vectorLevel()
	st := new(canaryState)
	seed := uint64(0x9e3779b97f4a7c15) ^ uint64(time.Now().UnixNano())
	next := func() uint64 { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed | 1 }
	for i := range st.gpr {
		st.gpr[i] = next()
	}
	for i := range st.k {
		st.k[i] = next()
	}
	for i := 0; i < len(st.vec); i += 8 {
		binary.LittleEndian.PutUint64(st.vec[i:], next())
	}
	st.mxcsr = 0x7f80 // all exceptions masked, round toward zero
	ts := unix.NsecToTimespec(int64(ms) * int64(time.Millisecond))
	fmt.Printf("ready %d %d %#x\n", unix.Gettid(), level, canaryTargetAddr())
	t0 := time.Now()
	ret := canarySleep(&ts, st, level)
	elapsed := time.Since(t0)
	var bad []string
	names := []string{"rbx", "rbp", "r8", "r9", "r12", "r13", "r14", "r15"}
	for i, n := range names {
		if st.gprAfter[i] != st.gpr[i] {
			bad = append(bad, n)
		}
	}
	for i, want := range []uint64{1, 0, uint64(uintptr(unsafe.Pointer(&ts))), 0} {
		if st.gprAfter[8+i] != want {
			bad = append(bad, []string{"rdi", "rsi", "rdx", "r10"}[i])
		}
	}
	if st.mxcsrAfter != st.mxcsr {
		bad = append(bad, fmt.Sprintf("mxcsr(%#x)", st.mxcsrAfter))
	}
	regs, width, prefix := 16, 16, "xmm"
	switch level {
	case 2:
		regs, width, prefix = 32, 64, "zmm"
		for i := range st.k {
			if st.kAfter[i] != st.k[i] {
				bad = append(bad, "k"+strconv.Itoa(i))
			}
		}
	case 1:
		width, prefix = 32, "ymm"
	}
	for i := 0; i < regs; i++ {
		if !bytes.Equal(st.vec[i*64:i*64+width], st.vecAfter[i*64:i*64+width]) {
			bad = append(bad, prefix+strconv.Itoa(i))
		}
	}
	if len(bad) == 0 {
		bad = []string{"-"}
	}
	fmt.Printf("done %d %d %s\n", ret, elapsed.Microseconds(), strings.Join(bad, ","))
	return 0
}

// errMissedSleep: the canary's sleep ended before it was seen.
var errMissedSleep = errors.New("the canary never blocked in clock_nanosleep")

var (
	canaryOnce   sync.Once
	canaryErr    error
	canaryReport string
)

// Canary tries the whole mechanism once per memdoctor process on a
// throwaway child and returns why it failed; no real process may be
// touched after a failure. It takes about 100 ms.
func Canary() error {
	canaryOnce.Do(func() {
		// The canary's thread sleeps once: on a loaded host the sleep can
		// be over before memdoctor sees it, which proves nothing either
		// way; try again with a longer sleep.
		for _, sleep := range []time.Duration{60 * time.Millisecond, 400 * time.Millisecond, 3 * time.Second} {
			canaryReport, canaryErr = runCanary(sleep)
			if !errors.Is(canaryErr, errMissedSleep) {
				break
			}
		}
		if canaryErr != nil {
			canaryErr = fmt.Errorf("%w: %w; memdoctor will not call into other processes on this host (please report it with `uname -r` and the CPU model)", ErrCanary, canaryErr)
		}
	})
	return canaryErr
}

// CanaryReport describes the last canary run (for tests and --verbose).
func CanaryReport() string { return canaryReport }

func runCanary(sleep time.Duration) (string, error) {
	cmd := exec.Command(procfs.SelfExe)
	cmd.Env = []string{canaryEnv + "=" + strconv.Itoa(int(sleep/time.Millisecond)), "GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=2"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting the canary: %w", err)
	}
	pid := cmd.Process.Pid
	finish := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	read := func(prefix string) ([]string, error) {
		select {
		case l, ok := <-lines:
			f := strings.Fields(l)
			if !ok || len(f) == 0 || f[0] != prefix {
				return nil, fmt.Errorf("the canary said %q, want %q (stderr: %s)", l, prefix, strings.TrimSpace(stderr.String()))
			}
			return f[1:], nil
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("the canary did not say %q within 10 s", prefix)
		}
	}
	f, err := read("ready")
	if err != nil || len(f) != 3 {
		finish()
		return "", fmt.Errorf("canary start: %w %q", err, f)
	}
	tid, _ := strconv.Atoi(f[0])
	level, _ := strconv.ParseInt(f[1], 10, 64)
	addr, _ := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
	// Wait until it sleeps.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if nr, _ := ThreadSyscall(pid, tid); nr == unix.SYS_CLOCK_NANOSLEEP {
			break
		}
		if time.Now().After(deadline) {
			finish()
			return "", fmt.Errorf("%w (waited 5 s)", errMissedSleep)
		}
		if len(lines) > 0 {
			// It printed its result: its sleep was over before it was
			// seen sleeping.
			finish()
			return "", errMissedSleep
		}
		time.Sleep(200 * time.Microsecond)
	}
	s, err := Attach(pid, tid, Options{Timeout: 5 * time.Second, ownChild: true})
	if err != nil {
		finish()
		if errors.Is(err, ErrProcessGone) {
			// Its sleep ended, and it exited, between being seen asleep
			// and being stopped.
			return "", fmt.Errorf("%w (%w)", errMissedSleep, err)
		}
		return "", fmt.Errorf("attaching to the canary: %w", err)
	}
	stop := s.Stop()
	ret, cerr := s.Call(context.Background(), "canaryTarget", uint64(addr), 7, 5, uint64(level))
	derr := s.Detach()
	report := fmt.Sprintf("canary pid %d thread %d: stopped in syscall %d (restart %v), %d bytes of extended state, call returned %d in %s, held %s",
		pid, tid, stop.Syscall, stop.Restart, len(s.xstate), ret, s.Calls[0].Duration.Round(time.Microsecond), s.Held.Round(time.Microsecond))
	if cerr != nil || derr != nil {
		finish()
		return report, fmt.Errorf("calling into the canary: %w", errors.Join(cerr, derr))
	}
	if stop.Syscall != unix.SYS_CLOCK_NANOSLEEP || !stop.Restart {
		// Its sleep ended between being seen asleep and being stopped
		// (stopped elsewhere, or on the sleep's way out with nothing to
		// restart): the restart path was not tried. Canary tries again
		// with longer sleeps; a kernel that never reports a restartable
		// sleep fails every try, and the canary with it.
		finish()
		return report, fmt.Errorf("%w (stopped in syscall %d, restart %v)", errMissedSleep, stop.Syscall, stop.Restart)
	}
	if ret != 3*7+5 {
		finish()
		return report, fmt.Errorf("the call returned %#x, want %d (0xdead: the stack was misaligned)", ret, 3*7+5)
	}
	f, err = read("done")
	if err != nil || len(f) != 3 {
		finish()
		return report, fmt.Errorf("canary result: %w %q", err, f)
	}
	werr := cmd.Wait()
	sret, _ := strconv.ParseInt(f[0], 10, 64)
	us, _ := strconv.ParseInt(f[1], 10, 64)
	report += fmt.Sprintf("; the sleep returned %d after %d µs; registers changed: %s", sret, us, f[2])
	switch {
	case sret != 0:
		return report, fmt.Errorf("the canary's clock_nanosleep returned %d (want 0; -516 is ERESTART_RESTARTBLOCK leaking to user space)", sret)
	case time.Duration(us)*time.Microsecond < sleep:
		return report, fmt.Errorf("the canary's sleep ended early, after %d µs of %s", us, sleep)
	case f[2] != "-":
		return report, fmt.Errorf("the canary's registers changed: %s", f[2])
	case werr != nil:
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return report, fmt.Errorf("the canary died of %s", ws.Signal())
			}
		}
		return report, fmt.Errorf("the canary: %w", werr)
	}
	return report, nil
}
