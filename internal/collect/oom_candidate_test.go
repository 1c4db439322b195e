package collect_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

const v1Memory = "/sys/fs/cgroup/memory"

// startIn starts a python3 program in the v1 memory cgroup dir (moved
// there before it allocates) and waits for it to print "ready"; it is
// killed when the test ends.
func startIn(t *testing.T, dir, program string) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("echo $$ > %s/cgroup.procs && exec python3 -c '%s'", dir, program))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("program did not start: %q %v", l, err)
	}
	return cmd.Process.Pid
}

// TestOOMCandidateReal (root, cgroup v1 memory controller): a cgroup of
// the test's own near its limit, holding a process of its own and, in a
// cgroup below, one with 48 MiB of anon. The collector names the one the
// OOM killer would choose: the large one (the cgroup's subtree is where
// the kernel looks), then the small one once its oom_score_adj is 1000,
// the large one again when both are at 1000, and the small one when the
// large one's is -1000 (never chosen), where the test may set that.
// Without per-process collection nothing is named.
func TestOOMCandidateReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make memory cgroups")
	}
	if _, err := os.Stat(v1Memory + "/memory.usage_in_bytes"); err != nil {
		t.Skip("no cgroup v1 memory hierarchy")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	name := fmt.Sprintf("memdoctor-oomcand-%d-%d", os.Getpid(), time.Now().UnixNano())
	dir := filepath.Join(v1Memory, name)
	worker := filepath.Join(dir, "worker")
	for _, d := range []string{dir, worker} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Skipf("cannot make a memory cgroup: %v", err)
		}
	}
	t.Cleanup(func() { // after the processes are killed (cleanups run last first)
		for _, d := range []string{worker, dir} {
			for try := 0; try < 100; try++ {
				if err := os.Remove(d); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	large := startIn(t, worker, `import time
b = bytearray(48 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
time.sleep(120)`)
	small := startIn(t, dir, `import time
print("ready", flush=True)
time.sleep(120)`)
	// The limit just above what the two hold: near it, never past it.
	usage, err := os.ReadFile(dir + "/memory.usage_in_bytes")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := strconv.ParseInt(strings.TrimSpace(string(usage)), 10, 64)
	if err := os.WriteFile(dir+"/memory.limit_in_bytes", []byte(strconv.FormatInt(u+u/20+(1<<20), 10)), 0); err != nil {
		t.Fatal(err)
	}
	cg := "/" + name
	candidate := func(top int) (*sample.Snapshot, string, string) {
		t.Helper()
		res, err := collect.Collect(procfs.NewFS("/"), collect.Options{TopProcesses: top, TopCgroups: 1, Live: true, FocusCgroup: cg})
		if err != nil {
			t.Fatal(err)
		}
		s := &res.Snapshot
		ms := s.Select("memdoctor_cgroup_oom_candidate_bytes", "cgroup", cg)
		if len(ms) == 0 {
			return s, "", ""
		}
		if len(ms) > 1 {
			t.Errorf("%d candidates for one cgroup: %+v", len(ms), ms)
		}
		return s, ms[0].Labels.Get("pid"), ms[0].Labels.Get("comm")
	}
	setAdj := func(pid, adj int) {
		t.Helper()
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte(strconv.Itoa(adj)), 0); err != nil {
			t.Fatal(err)
		}
	}

	s, pid, comm := candidate(3)
	if pid != strconv.Itoa(large) || comm != "python3" {
		t.Fatalf("candidate pid %q comm %q, want the large python3 %d in the cgroup below", pid, comm, large)
	}
	if b := s.Value("memdoctor_cgroup_oom_candidate_bytes", "cgroup", cg); b < 48<<20 {
		t.Errorf("candidate's RSS+swap+page tables %v, want at least its 48 MiB", b)
	}
	if n := s.Value("memdoctor_cgroup_processes", "cgroup", cg); n != 2 {
		t.Errorf("%v processes in the cgroup and below, want 2", n)
	}
	if adj := s.Value("memdoctor_cgroup_oom_candidate_score_adj", "cgroup", cg); adj != 0 {
		t.Errorf("candidate's oom_score_adj %v, want 0", adj)
	}

	setAdj(small, 1000)
	s, pid, _ = candidate(3)
	if pid != strconv.Itoa(small) {
		t.Errorf("with oom_score_adj 1000 on the small process, candidate pid %q, want %d", pid, small)
	}
	if adj := s.Value("memdoctor_cgroup_oom_candidate_score_adj", "cgroup", cg); adj != 1000 {
		t.Errorf("candidate's oom_score_adj %v, want 1000", adj)
	}

	setAdj(large, 1000)
	if _, pid, _ = candidate(3); pid != strconv.Itoa(large) {
		t.Errorf("both at oom_score_adj 1000, candidate pid %q, want the large %d", pid, large)
	}

	// Lowering an oom_score_adj takes CAP_SYS_RESOURCE, which a container's
	// root may lack.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", large), []byte("-1000"), 0); err != nil {
		t.Logf("oom_score_adj -1000 not settable here (%v): its exclusion is not checked", err)
	} else if _, pid, _ = candidate(3); pid != strconv.Itoa(small) {
		t.Errorf("with the large process at oom_score_adj -1000, candidate pid %q, want the small %d", pid, small)
	}

	if s, pid, _ := candidate(0); pid != "" || s.Has("memdoctor_cgroup_processes") {
		t.Errorf("without per-process collection a candidate was named: %q", pid)
	}
}

// TestOOMCandidateExclusions: what the kernel never chooses is never
// named, on a v2 tree written as the kernel presents it (the exclusion of
// -1000 cannot be set up here without CAP_SYS_RESOURCE): a process at
// oom_score_adj -1000, the host's init, a kernel thread (no RSS). A
// cgroup whose process list is missing (a capture made before the lists
// were read) names no one and leaves no note; one with more processes
// than the collector reads names no one and says so.
func TestOOMCandidateExclusions(t *testing.T) {
	t.Parallel()
	dir := copyTree(t)
	if err := os.RemoveAll(filepath.Join(dir, "sys", "fs", "cgroup")); err != nil {
		t.Fatal(err)
	}
	status := func(name string, rssKB int) string {
		s := "Name:\t" + name + "\nUid:\t0\t0\t0\t0\nThreads:\t1\n"
		if rssKB >= 0 {
			s += fmt.Sprintf("VmRSS:\t%d kB\nRssAnon:\t%d kB\nVmSwap:\t0 kB\nVmPTE:\t4 kB\n", rssKB, rssKB)
		}
		return s
	}
	files := map[string]string{
		"proc/self/mountinfo":                  "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n",
		"sys/fs/cgroup/cgroup.controllers":     "memory\n",
		"sys/fs/cgroup/cgroup.stat":            "nr_descendants 3\nnr_dying_descendants 0\n",
		"sys/fs/cgroup/app/memory.current":     "96000000\n",
		"sys/fs/cgroup/app/memory.max":         "100000000\n",
		"sys/fs/cgroup/app/memory.stat":        "anon 90000000\nfile 0\ninactive_file 0\n",
		"sys/fs/cgroup/app/cgroup.procs":       "1\n9001\n9002\n",
		"sys/fs/cgroup/app/sub/memory.current": "50000000\n",
		"sys/fs/cgroup/app/sub/cgroup.procs":   "9003\n",
		"proc/1/status":                        status("init", 900000),
		"proc/1/oom_score_adj":                 "0\n",
		"proc/9001/status":                     status("guarded", 80000),
		"proc/9001/oom_score_adj":              "-1000\n",
		"proc/9002/status":                     status("worker", 3000),
		"proc/9002/oom_score_adj":              "0\n",
		"proc/9003/status":                     status("kthread", -1),
		"proc/9003/oom_score_adj":              "0\n",
		// No cgroup.procs: read as from an older capture.
		"sys/fs/cgroup/old/memory.current": "99000000\n",
		"sys/fs/cgroup/old/memory.max":     "100000000\n",
		// More processes than read.
		"sys/fs/cgroup/busy/memory.current": "98000000\n",
		"sys/fs/cgroup/busy/memory.max":     "100000000\n",
	}
	var busy strings.Builder
	for i := range 501 {
		fmt.Fprintf(&busy, "%d\n", 20000+i)
	}
	files["sys/fs/cgroup/busy/cgroup.procs"] = busy.String()
	writeFiles(t, dir, files)
	res, err := collectDir(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &res.Snapshot
	if ms := s.Select("memdoctor_cgroup_oom_candidate_bytes", "cgroup", "/app"); len(ms) != 1 || ms[0].Labels.Get("comm") != "worker" || ms[0].Labels.Get("pid") != "9002" {
		t.Errorf("candidate of /app %+v, want worker (9002): guarded is at -1000, init is never chosen", ms)
	} else if ms[0].Value != (3000+4)*1024 {
		t.Errorf("worker's RSS+swap+page tables %v", ms[0].Value)
	}
	if n := s.Value("memdoctor_cgroup_processes", "cgroup", "/app"); n != 3 {
		t.Errorf("%v processes in /app and below, want 3 (the kernel thread has no memory)", n)
	}
	for _, cg := range []string{"/old", "/busy"} {
		if s.Has("memdoctor_cgroup_oom_candidate_bytes") && len(s.Select("memdoctor_cgroup_oom_candidate_bytes", "cgroup", cg)) > 0 {
			t.Errorf("%s: a candidate named from an incomplete process list", cg)
		}
	}
	var notes []string
	for _, n := range res.Notes {
		if strings.Contains(n.Hides, "OOM killer") {
			notes = append(notes, n.Source+": "+n.Message)
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "sys/fs/cgroup/busy:") {
		t.Errorf("notes about the OOM killer's choice %q, want one, about /busy", notes)
	}
}
