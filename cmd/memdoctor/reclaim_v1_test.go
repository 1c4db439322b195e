package main

// reclaim on cgroup v1 (root): a parent cgroup of the test's own, full of
// removed children that its page cache keeps alive, is emptied through
// memory.force_empty: the dry run changes nothing, the root and a cgroup
// with a task are refused, and --apply frees the dying children.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cgroupBytes reads a v1 byte counter of dir.
func cgroupBytes(t *testing.T, dir, file string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReclaimV1ForceEmpty(t *testing.T) {
	requireLinuxRoot(t)
	root, v2 := memoryHierarchy(t)
	if v2 {
		t.Skip("the memory controller is on cgroup v2 here; this is the v1 path")
	}
	const n = 120
	rel := fmt.Sprintf("/memdoctor_reclaim_v1_%d", os.Getpid())
	parent := filepath.Join(root, rel)
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(parent) })
	dataDir := t.TempDir() // a disk filesystem: the writes are page cache
	for i := 0; i < n; i++ {
		d := filepath.Join(parent, "job"+strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec dd if=/dev/zero of=%s bs=64k count=4 status=none", d, filepath.Join(dataDir, "f"+strconv.Itoa(i)))
		if out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("writer %d: %v: %s", i, err, out)
		}
		var err error
		for try := 0; try < 50; try++ {
			if err = os.Remove(d); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	usage := cgroupBytes(t, parent, "memory.usage_in_bytes")
	if usage < n*200<<10 {
		t.Fatalf("the parent holds %d bytes after %d writers of 256 KiB: the removed cgroups are not charged, the test proves nothing", usage, n)
	}

	type result struct {
		Plan struct {
			V1      bool
			Dying   int64
			Targets []struct {
				Path  string
				Bytes int64
			}
		}
		Applied bool
		Result  *struct {
			Before int64 `json:"dying_before"`
			After  int64 `json:"dying_after"`
			Waited int64 `json:"waited_ns"`
		}
	}
	run := func(args ...string) (result, string, string, int) {
		out, errOut, code := runCLI(t, append([]string{"reclaim"}, args...)...)
		var r result
		if code == 0 && strings.Contains(strings.Join(args, " "), "--json") {
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("reclaim %v: %v\n%s", args, err, out)
			}
		}
		return r, out, errOut, code
	}

	// The dry run: what it would write, where; nothing changes.
	_, out, errOut, code := run("--cgroup", rel)
	if code != 0 {
		t.Fatalf("dry run exited %d: %s", code, errOut)
	}
	t.Logf("dry run:\n%s", out)
	for _, want := range []string{"would write 0 to " + parent + "/memory.force_empty", "dry run: nothing changed", "live memory"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q", want)
		}
	}
	if u := cgroupBytes(t, parent, "memory.usage_in_bytes"); u < usage*9/10 {
		t.Errorf("the dry run changed the parent's usage %d -> %d", usage, u)
	}

	// The root, and a cgroup with a task in it or below it, are refused.
	if _, _, errOut, code := run("--apply"); code == 0 || !strings.Contains(errOut, "root") || !strings.Contains(errOut, "--cgroup") {
		t.Errorf("reclaim --apply on v1 without --cgroup: exit %d, %q", code, errOut)
	}
	live := filepath.Join(parent, "live")
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("/bin/sh", "-c", "echo $$ > "+live+"/cgroup.procs && exec sleep 60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(filepath.Join(live, "tasks")); len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, _, errOut, code = run("--cgroup", rel, "--apply")
	_ = sleeper.Process.Kill()
	_ = sleeper.Wait()
	if code == 0 || !strings.Contains(errOut, "tasks") || !strings.Contains(errOut, "live memory") {
		t.Errorf("reclaim --apply on a cgroup with a task below it: exit %d, %q", code, errOut)
	}
	if u := cgroupBytes(t, parent, "memory.usage_in_bytes"); u < usage*9/10 {
		t.Errorf("the refused --apply changed the parent's usage %d -> %d", usage, u)
	}
	for try := 0; try < 50; try++ {
		if err := os.Remove(live); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	// --apply: the removed children are freed.
	r, _, errOut, code := run("--cgroup", rel, "--apply", "--json")
	if code != 0 {
		t.Fatalf("reclaim --apply exited %d: %s", code, errOut)
	}
	if !r.Applied || !r.Plan.V1 || r.Result == nil || len(r.Plan.Targets) != 1 || r.Plan.Targets[0].Path != rel {
		t.Fatalf("reclaim --apply --json: %+v", r)
	}
	after := cgroupBytes(t, parent, "memory.usage_in_bytes")
	t.Logf("force_empty on %s: usage %d -> %d bytes, dying %d -> %d in %.2f s", rel, usage, after, r.Result.Before, r.Result.After, float64(r.Result.Waited)/1e9)
	if after > usage/10 {
		t.Errorf("the parent still holds %d of %d bytes", after, usage)
	}
	if r.Result.Before-r.Result.After < n*8/10 {
		t.Errorf("dying %d -> %d: want at least %d of the test's %d freed", r.Result.Before, r.Result.After, n*8/10, n)
	}
}
