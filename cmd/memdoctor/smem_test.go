package main

// Per-process USS/PSS/RSS agree with Debian's smem, which sums
// /proc/PID/smaps per mapping, for a static test process with a known shape.

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startProgram compiles testdata/programs/NAME.c statically and starts it;
// it waits for the "ready" line and returns the pids it printed.
func startProgram(t *testing.T, name string, args ...string) []int {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	bin := filepath.Join(t.TempDir(), name)
	src := filepath.Join(repoRoot(t), "testdata", "programs", name+".c")
	if out, err := exec.Command("gcc", "-O1", "-static", "-o", bin, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, out)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s did not become ready: %v", name, err)
	}
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "ready" {
		t.Fatalf("%s printed %q", name, line)
	}
	var pids []int
	for _, x := range f[1:] {
		p, err := strconv.Atoi(x)
		if err != nil {
			t.Fatalf("%s printed %q", name, line)
		}
		pids = append(pids, p)
	}
	return pids
}

func TestProcessMemoryAgreesWithSmem(t *testing.T) {
	if _, err := exec.LookPath("smem"); err != nil {
		t.Skip("smem not installed (apt-get install smem)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to read every process' smaps")
	}
	pids := startProgram(t, "shared_private")
	pid := pids[0]

	// Only its own process: on a busy host it need not be among the 50
	// largest.
	r := checkJSON(t, "--top", "50", "--pid", strconv.Itoa(pid))
	var got *struct{ uss, pss, rss int64 }
	for _, p := range r.Processes {
		if p.PID == pid {
			if p.PSSBytes == nil || p.USSBytes == nil {
				t.Fatalf("pid %d has no PSS/USS in the report", pid)
			}
			got = &struct{ uss, pss, rss int64 }{*p.USSBytes, *p.PSSBytes, p.RSSBytes}
		}
	}
	if got == nil {
		t.Fatalf("test process %d not among the top processes", pid)
	}
	out, err := exec.Command("smem", "-H", "-c", "pid uss pss rss").Output()
	if err != nil {
		t.Fatalf("smem: %v", err)
	}
	var want *struct{ uss, pss, rss int64 }
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && f[0] == strconv.Itoa(pid) {
			kb := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v << 10 }
			want = &struct{ uss, pss, rss int64 }{kb(f[1]), kb(f[2]), kb(f[3])}
		}
	}
	if want == nil {
		t.Fatalf("smem did not list pid %d:\n%s", pid, out)
	}
	// smem rounds every mapping to kB; allow 64 KiB plus 0.5%.
	for _, c := range []struct {
		name      string
		got, want int64
	}{{"USS", got.uss, want.uss}, {"PSS", got.pss, want.pss}, {"RSS", got.rss, want.rss}} {
		tol := int64(64<<10) + c.want/200
		if d := c.got - c.want; d > tol || d < -tol {
			t.Errorf("%s: memdoctor %d, smem %d (diff %d > %d)", c.name, c.got, c.want, d, tol)
		}
	}
	// The shape itself: 96 MiB private, 32 MiB shared with one child.
	if got.uss < 96<<20 || got.uss > 100<<20 {
		t.Errorf("USS %d, want ≈96 MiB of private heap", got.uss)
	}
	if d := got.pss - got.uss; d < 15<<20 || d > 17<<20 {
		t.Errorf("PSS − USS = %d, want ≈16 MiB (half of 32 MiB shared)", d)
	}
	t.Logf("pid %d: memdoctor uss/pss/rss %d/%d/%d, smem %d/%d/%d", pid, got.uss, got.pss, got.rss, want.uss, want.pss, want.rss)
}
