package heapprof

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// startPIE builds prog, a C program, as a position-independent executable
// named name, starts it and returns its path, its PID and the addresses it
// prints on its first line (hexadecimal, space-separated). It waits on
// stdin, which is closed when the test ends; the test is skipped without
// gcc.
func startPIE(t *testing.T, name, prog string) (bin string, pid int, addrs []uint64) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, name)
	if out, err := exec.Command("gcc", "-O1", "-fPIE", "-pie", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	pid, addrs = startProg(t, bin)
	return bin, pid, addrs
}

// startProg starts bin and returns its PID and the addresses it prints on
// its first line (hexadecimal, space-separated). It waits on stdin, which
// is closed when the test ends.
func startProg(t *testing.T, bin string) (pid int, addrs []uint64) {
	t.Helper()
	cmd := exec.Command(bin)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(line) {
		a, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
		if err != nil {
			t.Fatalf("program said %q", line)
		}
		addrs = append(addrs, a)
	}
	return cmd.Process.Pid, addrs
}
