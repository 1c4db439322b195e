package malloc

// The target comes out of a thousand sessions exactly as it was:
// testdata/programs/inject_integrity.c keeps known values in its general,
// vector (SSE/AVX/AVX-512, whatever the CPU has) and opmask registers across
// every system call it makes, and in a user-mode loop, and counts any
// change; it counts any -ERESTART* code a system call returns, and every
// real-time signal each thread receives. memdoctor calls into every kind of
// thread in turn (blocked in clock_nanosleep, read on a pipe, futex,
// epoll_wait, read on stdin, and running in user mode), inspecting and
// trimming, while a timer signal fires every millisecond and queued signals
// are sent to random threads: every signal must arrive, once.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type integrityStatus struct {
	Errors       int64            `json:"errors"`
	RestartCodes int64            `json:"restart_codes"`
	Checks       map[string]int64 `json:"checks"`
	Signals      struct {
		Timer int64            `json:"timer"`
		RT1   map[string]int64 `json:"rt1"`
	} `json:"signals"`
	FirstError string `json:"first_error"`
}

func TestIntegrityUnderCalls(t *testing.T) {
	requirePtrace(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	bin := filepath.Join(t.TempDir(), "inject_integrity")
	src := filepath.Join("..", "..", "testdata", "programs", "inject_integrity.c")
	if out, err := exec.Command("gcc", "-O2", "-Wall", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
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
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	next := func(prefix string) string {
		t.Helper()
		done := make(chan bool, 1)
		go func() { done <- lines.Scan() }()
		select {
		case ok := <-done:
			l := lines.Text()
			if !ok || !strings.HasPrefix(l, prefix+" ") {
				t.Fatalf("target said %q, want %q", l, prefix)
			}
			return strings.TrimPrefix(l, prefix+" ")
		case <-time.After(30 * time.Second):
			t.Fatalf("target did not say %q", prefix)
		}
		return ""
	}
	var ready struct {
		PID  int            `json:"pid"`
		ISA  string         `json:"vector_isa"`
		TIDs map[string]int `json:"tids"`
	}
	if err := json.Unmarshal([]byte(next("ready")), &ready); err != nil {
		t.Fatal(err)
	}
	status := func() integrityStatus {
		t.Helper()
		if _, err := fmt.Fprintln(in, "status"); err != nil {
			t.Fatal(err)
		}
		var st integrityStatus
		if err := json.Unmarshal([]byte(next("status")), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	kinds := []string{"sleep", "read", "futex", "epoll", "vector", "main"}
	for _, k := range kinds {
		if ready.TIDs[k] == 0 {
			t.Fatalf("no %s thread in %+v", k, ready)
		}
	}
	pid := cmd.Process.Pid

	// Queued real-time signals (SIGRTMIN+1: glibc's SIGRTMIN is 34) to
	// random threads, all along.
	const sigRT1 = syscall.Signal(35)
	var (
		mu   sync.Mutex
		sent = map[string]int64{}
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		rnd := rand.New(rand.NewSource(2))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(500+rnd.Intn(3000)) * time.Microsecond):
			}
			k := kinds[rnd.Intn(len(kinds))]
			if syscall.Tgkill(pid, ready.TIDs[k], sigRT1) == nil {
				mu.Lock()
				sent[k]++
				mu.Unlock()
			}
		}
	}()

	ctx := context.Background()
	held := map[string][]float64{}
	const sessions = 1000
	for i := 0; i < sessions; i++ {
		k := kinds[i%len(kinds)]
		opt := Options{Method: MethodPtrace, thread: ready.TIDs[k]}
		var p *Pause
		if i%10 == 9 {
			tr, err := Trim(ctx, pid, opt)
			if err != nil {
				t.Fatalf("session %d, trim on the %s thread: %v", i, k, err)
			}
			p = tr.Pause
		} else {
			rep, err := Inspect(ctx, pid, opt)
			if err != nil {
				t.Fatalf("session %d, inspect on the %s thread: %v", i, k, err)
			}
			p = rep.Pause
		}
		held[k] = append(held[k], p.AttachedMs)
		if i == sessions/2 {
			if st := status(); st.Errors != 0 || st.RestartCodes != 0 {
				t.Fatalf("half way: %+v", st)
			}
		}
	}
	close(stop)
	wg.Wait()
	time.Sleep(100 * time.Millisecond) // the last signals land
	st := status()
	for _, k := range kinds {
		v := held[k]
		sort.Float64s(v)
		t.Logf("%-6s thread %d: %d sessions, held median %.2f ms, max %.2f ms; checks %d; rt signals sent %d, received %d",
			k, ready.TIDs[k], len(v), v[len(v)/2], v[len(v)-1], st.Checks[k], sent[k], st.Signals.RT1[k])
		if st.Signals.RT1[k] != sent[k] {
			t.Errorf("%s thread: %d queued signals sent, %d received", k, sent[k], st.Signals.RT1[k])
		}
	}
	t.Logf("vector ISA %s; timer signals %d; errors %d, restart codes %d %s", ready.ISA, st.Signals.Timer, st.Errors, st.RestartCodes, st.FirstError)
	if st.Errors != 0 || st.RestartCodes != 0 || st.Signals.Timer == 0 {
		t.Errorf("the target saw %+v", st)
	}
	if _, err := fmt.Fprintln(in, "exit"); err != nil {
		t.Fatal(err)
	}
	var final integrityStatus
	if err := json.Unmarshal([]byte(next("status")), &final); err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds[:5] { // main makes no checked call
		if final.Checks[k] == 0 {
			t.Errorf("the %s thread made no checked round: %+v", k, final)
		}
	}
	if final.Errors != 0 || final.RestartCodes != 0 {
		t.Errorf("at exit the target saw %+v", final)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("target exit: %v (last status %+v)", err, final)
	}
}
