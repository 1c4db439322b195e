package collect_test

// The allocator's view from memdoctor's preload library, read from real
// processes running it: a stats path with %p (one file per process, named
// by the pid), a path shared by a process and its forked child (each reads
// its own lines), and a path the library refuses (a note naming the
// process, no numbers).

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// forker holds 30 MB of malloc'd bytes (1000 B each: glibc malloc, not
// pymalloc), forks a child that adds 90 MB more, and prints both pids.
const forker = `
import os, sys, time
keep = [bytes(1000) for _ in range(30000)]
r, w = os.pipe()
child = os.fork()
if child == 0:
    more = [bytes(1000) for _ in range(90000)]
    os.write(w, b"x")
    time.sleep(120)
    os._exit(0)
os.read(r, 1)
print(os.getpid(), child, flush=True)
time.sleep(120)
`

func startForker(t *testing.T, lib, stats string) (parent, child int) {
	t.Helper()
	cmd := exec.Command("python3", "-c", forker)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMDOCTOR_STATS="+stats, "MEMDOCTOR_STATS_INTERVAL=100ms")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("forker: %v", err)
	}
	f := strings.Fields(line)
	parent, _ = strconv.Atoi(f[0])
	child, _ = strconv.Atoi(f[1])
	return parent, child
}

func TestPreloadStatsOfRealProcesses(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		if _, err := exec.LookPath("gcc"); err != nil {
			t.Skip("no C compiler to build the preload library")
		}
	}
	lib, err := preload.Build(context.Background(), preload.BuildOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ownP, ownC := startForker(t, lib, filepath.Join(dir, "own.%p.jsonl"))
	shP, shC := startForker(t, lib, filepath.Join(dir, "shared.jsonl"))
	badP, badC := startForker(t, lib, filepath.Join(dir, "bad.%d.jsonl"))
	for _, p := range []int{ownP, ownC} {
		if _, err := os.Stat(filepath.Join(dir, "own."+strconv.Itoa(p)+".jsonl")); err != nil {
			t.Fatalf("the library did not write its own file for pid %d: %v", p, err)
		}
	}
	time.Sleep(500 * time.Millisecond) // summaries after the child's allocation

	// Every collection reads each process' own numbers: the shared file
	// interleaves the parent's and the child's lines.
	for round := 0; round < 6; round++ {
		res, err := collect.Collect(procfs.NewFS("/"), collect.Options{TopProcesses: 400, ArenaScan: true, Live: true})
		if err != nil {
			t.Fatal(err)
		}
		s := &res.Snapshot
		inUse := func(pid int) (float64, bool) {
			return s.Get("memdoctor_malloc_in_use_bytes", "pid", strconv.Itoa(pid))
		}
		for _, c := range []struct {
			name     string
			pid      int
			min, max float64
		}{
			{"%p parent", ownP, 25e6, 70e6}, {"%p child", ownC, 110e6, 200e6},
			{"shared parent", shP, 25e6, 70e6}, {"shared child", shC, 110e6, 200e6},
		} {
			v, ok := inUse(c.pid)
			if !ok {
				t.Fatalf("round %d: %s (pid %d): no memdoctor_malloc_in_use_bytes; notes %+v", round, c.name, c.pid, res.Notes)
			}
			if v < c.min || v > c.max {
				t.Errorf("round %d: %s (pid %d): in use %.0f, want %.0f..%.0f", round, c.name, c.pid, v, c.min, c.max)
			}
		}
		for _, p := range []int{badP, badC} {
			sp := strconv.Itoa(p)
			if _, ok := inUse(p); ok {
				t.Errorf("pid %d: numbers from a path the library refuses", p)
			}
			if v, ok := s.Get("memdoctor_process_preload", "pid", sp); !ok || v != 1 {
				t.Errorf("pid %d: memdoctor_process_preload %v %v, want 1", p, v, ok)
			}
			noted := false
			for _, n := range res.Notes {
				noted = noted || strings.Contains(n.Message, "(pid "+sp+") runs memdoctor's preload library with a MEMDOCTOR_STATS it refuses")
			}
			if !noted {
				t.Errorf("pid %d: no note on its refused stats path; notes %+v", p, res.Notes)
			}
		}
		if t.Failed() {
			return
		}
	}
}
