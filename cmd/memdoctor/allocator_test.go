package main

// Allocator retention seen without pausing anything: the workload runs with
// memdoctor's preload library writing its allocator stats, and `check`
// reads them. The hoarding workload is classified allocator_hoarding; the
// healthy one is not.

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheckClassifiesAllocatorRetention(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	lib, errOut, code := runCLI(t, "preload", "--print-path")
	if code != 0 {
		t.Fatalf("preload --print-path: %s", errOut)
	}
	lib = strings.TrimSpace(lib)
	dir := t.TempDir()
	bin := filepath.Join(dir, "alloc_workload")
	src := filepath.Join(repoRoot(t), "testdata", "programs", "alloc_workload.c")
	if out, err := exec.Command("gcc", "-O1", "-o", bin, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, c := range []struct {
		mode, mib string
		fire      bool
	}{{"hoard", "64", true}, {"healthy", "2", false}} {
		stats := filepath.Join(dir, c.mode+".jsonl")
		cmd := exec.Command(bin, c.mode, "8", c.mib, "4")
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMDOCTOR_STATS="+stats, "MEMDOCTOR_STATS_INTERVAL=200ms")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stdin, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatalf("%s did not become ready: %v", c.mode, err)
		}
		// Wait for a summary written after the workload settled.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(stats); err == nil && strings.Count(string(b), `"summary"`) >= 2 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		r := checkJSON(t, "--top", "20")
		var hit bool
		for _, f := range r.Findings {
			if f.ID == "allocator_hoarding" && strings.Contains(f.Subject, "pid "+itoa(cmd.Process.Pid)) {
				hit = true
				if v, ok := evidence(&f, "retained_bytes"); !ok || v < 256<<20 {
					t.Errorf("%s: retained %v", c.mode, v)
				}
			}
		}
		if hit != c.fire {
			t.Errorf("%s: allocator_hoarding fired=%v, want %v; findings %+v", c.mode, hit, c.fire, r.Findings)
		}
		_, _ = stdin.Write([]byte("exit\n"))
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
