package procfs

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestProcArenaMax starts real processes with each way of capping glibc's
// arenas and reads the cap back from their environment.
func TestProcArenaMax(t *testing.T) {
	fs := NewFS("/")
	for _, c := range []struct {
		env    []string
		want   int
		from   string
		capped bool
	}{
		{[]string{"MALLOC_ARENA_MAX=2"}, 2, "MALLOC_ARENA_MAX", true},
		{[]string{"GLIBC_TUNABLES=glibc.malloc.check=0:glibc.malloc.arena_max=3"}, 3, "GLIBC_TUNABLES=glibc.malloc.arena_max", true},
		// The tunable wins over its older alias.
		{[]string{"MALLOC_ARENA_MAX=8", "GLIBC_TUNABLES=glibc.malloc.arena_max=1"}, 1, "GLIBC_TUNABLES=glibc.malloc.arena_max", true},
		// 0 and nonsense are glibc's default: no cap.
		{[]string{"MALLOC_ARENA_MAX=0"}, 0, "", false},
		{[]string{"MALLOC_ARENA_MAX=many"}, 0, "", false},
		{nil, 0, "", false},
	} {
		cmd := exec.Command("sleep", "30")
		env := []string{}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MALLOC_ARENA_MAX=") && !strings.HasPrefix(kv, "GLIBC_TUNABLES=") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, c.env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Start returns once execve closed the child's descriptors, before
		// the kernel laid out its new environment: wait for it.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)); len(b) > 0 {
				break
			}
		}
		n, from, ok, err := fs.ProcArenaMax(cmd.Process.Pid)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		if n != c.want || from != c.from || ok != c.capped {
			t.Errorf("%v: read %d from %q (capped %v), want %d from %q (capped %v)", c.env, n, from, ok, c.want, c.from, c.capped)
		}
	}
}
