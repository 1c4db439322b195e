package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCheckContainersSection: a unit-like cgroup of the test's own, with a
// 64 MiB limit and a process holding 56 MiB in it, is listed under
// CONTAINERS by its unit name with its limit and working set.
func TestCheckContainersSection(t *testing.T) {
	root, v2 := memoryHierarchy(t)
	if v2 {
		t.Skip("the test writes v1 limit files")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	parent := filepath.Join(root, fmt.Sprintf("memdoctor-containers-%d-%d", os.Getpid(), time.Now().UnixNano()))
	dir := filepath.Join(parent, "memdoctor-test.service")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("cannot make memory cgroups: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec python3 -c 'import time
b = bytearray(56 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
time.sleep(120)'`, dir))
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		for _, d := range []string{dir, parent} {
			for try := 0; try < 100; try++ {
				if err := os.Remove(d); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.Itoa(64<<20)), 0); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready" {
		t.Fatalf("workload did not start: %q %v", buf, err)
	}
	stdout, stderr, code := runCLI(t, "check", "--top", "3")
	if code > 2 {
		t.Fatalf("check exit %d: %s", code, stderr)
	}
	_, section, ok := strings.Cut(stdout, "\nCONTAINERS")
	if !ok {
		t.Fatalf("no CONTAINERS section:\n%s", stdout)
	}
	section, _, _ = strings.Cut(section, "\n\n")
	cg := strings.TrimPrefix(dir, root)
	var row string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasSuffix(l, "memdoctor-test.service ("+cg+")") {
			row = l
		}
	}
	if row == "" {
		t.Fatalf("the test's unit is not listed by name under CONTAINERS:\n%s", section)
	}
	f := strings.Fields(row)
	if len(f) < 9 || f[0]+" "+f[1] != "64.0 MiB" {
		t.Errorf("row %q: want its 64 MiB limit first", row)
	}
	t.Logf("%s", row)
}
