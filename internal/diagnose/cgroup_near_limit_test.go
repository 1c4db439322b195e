package diagnose_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/seriestest"
)

const v1Memory = "/sys/fs/cgroup/memory"

// memcgOfTest makes a v1 memory cgroup of the test's own with a limit and
// removes it at the end (killing what is left in it).
func memcgOfTest(t *testing.T, limit int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make memory cgroups")
	}
	if _, err := os.Stat(v1Memory + "/memory.limit_in_bytes"); err != nil {
		t.Skip("no cgroup v1 memory hierarchy to make cgroups in")
	}
	dir := filepath.Join(v1Memory, fmt.Sprintf("memdoctor-rule-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		for try := 0; try < 100; try++ {
			if b, err := os.ReadFile(dir + "/cgroup.procs"); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						if p, err := os.FindProcess(pid); err == nil {
							_ = p.Kill()
						}
					}
				}
			}
			_ = os.WriteFile(dir+"/memory.force_empty", []byte("0"), 0)
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("cgroup %s not removed", dir)
	})
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(strconv.Itoa(limit)), 0); err != nil && f == "memory.limit_in_bytes" {
			t.Fatal(err)
		}
	}
	return dir
}

// runIn starts a shell command in the cgroup and waits for its first line
// of output ("ready"), leaving it running; it returns the shell's pid
// (the program's, when the script ends in exec).
func runIn(t *testing.T, dir, script string) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("echo $$ > %s/cgroup.procs && %s", dir, script))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf[:5]) != "ready" {
		t.Fatalf("workload did not start: %q %v", buf, err)
	}
	return cmd.Process.Pid
}

func nearLimitFindings(t *testing.T, dir string, top int) (usage, ws float64, fs []model.Finding) {
	t.Helper()
	res, err := collect.Collect(procfs.NewFS("/"), collect.Options{TopCgroups: 3, TopProcesses: top, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	cg := strings.TrimPrefix(dir, v1Memory)
	usage, ok := res.Snapshot.Get("memdoctor_cgroup_memory_usage_bytes", "cgroup", cg)
	if !ok {
		t.Fatalf("the test's cgroup %s, near its limit, was not read in full", cg)
	}
	ws = res.Snapshot.Value("memdoctor_cgroup_memory_working_set_bytes", "cgroup", cg)
	for _, f := range diagnose.Run(diagnose.Data{Latest: &res.Snapshot, Source: "live", Notes: res.Notes}).Findings {
		if f.ID == "cgroup_near_limit" && f.Subject == "cgroup "+cg {
			fs = append(fs, f)
		}
	}
	return usage, ws, fs
}

// TestCgroupNearLimitReal: a process whose heap holds 120 MiB in a 128 MiB
// cgroup fires; with per-process data (check's) the finding names it as
// the process the OOM killer would kill, without (a cgroup-only reading)
// it names no one. The healthy twin, the same cgroup filled to its limit
// with page cache written once, stays quiet.
func TestCgroupNearLimitReal(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	const limit = 128 << 20
	t.Run("anon", func(t *testing.T) {
		dir := memcgOfTest(t, limit)
		pid := runIn(t, dir, `exec python3 -c 'import time
b = bytearray(120 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
time.sleep(120)'`)
		usage, ws, fs := nearLimitFindings(t, dir, 3)
		if len(fs) != 1 {
			t.Fatalf("cgroup_near_limit did not fire once on a heap at %.0f%% of the limit (usage %.0f MiB): %+v", 100*ws/limit, usage/(1<<20), fs)
		}
		t.Logf("%s: %s", fs[0].Severity, fs[0].Summary)
		who := fmt.Sprintf("python3 (pid %d)", pid)
		if !strings.Contains(fs[0].Summary, "most likely "+who+": ") || !strings.Contains(fs[0].Summary, "its only process") {
			t.Errorf("the summary does not name %s, the cgroup's only process, as the OOM killer's choice: %s", who, fs[0].Summary)
		}
		var named string
		var size float64
		for _, e := range fs[0].Evidence {
			switch e.Name {
			case "oom_candidate":
				named = e.Text
			case "oom_candidate_bytes":
				size = e.Value
			}
		}
		// RSS counts the interpreter's file pages too, charged to
		// whichever cgroup read them first: it may pass the limit a little.
		if named != who || size < 120<<20 || size > 2*limit {
			t.Errorf("evidence oom_candidate %q with %.0f bytes, want %s with its 120 MiB heap and the interpreter", named, size, who)
		}
		if _, _, fs := nearLimitFindings(t, dir, 0); len(fs) != 1 || strings.Contains(fs[0].Summary, "most likely") {
			t.Errorf("without per-process data: %+v, want the finding naming no one", fs)
		}
	})
	t.Run("page cache", func(t *testing.T) {
		dir := memcgOfTest(t, limit)
		file := filepath.Join(t.TempDir(), "cache")
		runIn(t, dir, fmt.Sprintf(`dd if=/dev/urandom of=%s bs=1M count=300 status=none && sync && echo ready && exec sleep 120`, file))
		usage, ws, fs := nearLimitFindings(t, dir, 3)
		if usage < 0.9*limit {
			t.Fatalf("the twin is not near its limit (usage %.0f MiB of %d MiB): it proves nothing", usage/(1<<20), limit>>20)
		}
		if len(fs) != 0 {
			t.Errorf("cgroup_near_limit fired on page cache (working set %.0f MiB, usage %.0f MiB): %s", ws/(1<<20), usage/(1<<20), fs[0].Summary)
		}
	})
}

// TestCgroupNearLimitStaleCandidate: on a time range, a candidate the
// recorder read at an earlier sample but not at the last (the cgroup's
// process list could not be read whole then) is not named: the finding
// judges the last reading and says nothing of who then.
func TestCgroupNearLimitStaleCandidate(t *testing.T) {
	t.Parallel()
	w := seriestest.MustParse(t, `interval 15m
memdoctor_cgroup_info{memory="v2",mode="v2"} 1+0x8
memdoctor_cgroup_memory_limit_bytes{cgroup="/system.slice/worker.service"} 1073741824+0x8
memdoctor_cgroup_memory_usage_bytes{cgroup="/system.slice/worker.service"} 1000000000+0x8
memdoctor_cgroup_memory_working_set_bytes{cgroup="/system.slice/worker.service"} 1000000000+0x8
memdoctor_cgroup_processes{cgroup="/system.slice/worker.service"} 4+0x7 _
memdoctor_cgroup_oom_candidate_bytes{cgroup="/system.slice/worker.service",comm="worker",pid="1180"} 900000000+0x7 _
memdoctor_cgroup_oom_candidate_score_adj{cgroup="/system.slice/worker.service",comm="worker",pid="1180"} 0+0x7 _
`)
	rep := diagnose.Run(diagnose.Data{Window: w, Source: "test"})
	var got []model.Finding
	for _, f := range rep.Findings {
		if f.ID == "cgroup_near_limit" {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("cgroup_near_limit findings %+v, want one", got)
	}
	if strings.Contains(got[0].Summary, "most likely") {
		t.Errorf("a candidate of an earlier sample is named: %s", got[0].Summary)
	}
	for _, e := range got[0].Evidence {
		if strings.HasPrefix(e.Name, "oom_candidate") {
			t.Errorf("evidence %s from an earlier sample", e.Name)
		}
	}
}
