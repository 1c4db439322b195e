package diagnose_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// cgroupOOMFindings collects this host as a live check does (the kernel
// log included) and returns cgroup_oom_kills' findings about cg, and
// whether the kernel log was read.
func cgroupOOMFindings(t *testing.T, cg string) (fs []model.Finding, kmsg bool) {
	t.Helper()
	res, err := collect.Collect(procfs.NewFS("/"), collect.Options{TopCgroups: 3, Live: true, KmsgPath: "/dev/kmsg"})
	if err != nil {
		t.Fatal(err)
	}
	kmsg = true
	for _, n := range res.Notes {
		if n.Source == "dev/kmsg" {
			kmsg = false
			t.Logf("the kernel log was not read: %s", n.Message)
		}
	}
	for _, f := range diagnose.Run(diagnose.Data{Latest: &res.Snapshot, Source: "live", Notes: res.Notes}).Findings {
		if f.ID == "cgroup_oom_kills" && f.Subject == "cgroup "+cg {
			fs = append(fs, f)
		}
	}
	return fs, kmsg
}

// TestCgroupOOMKillsReal: a Python allocator in a 32 MiB cgroup of the
// test's own is OOM-killed; the rule names that cgroup and its one kill
// and, from the kernel's report in /dev/kmsg when the check reads it, the
// victim: python3 with the pid the test started, its RSS and anon RSS.
// Before the kill, the same cgroup (with its allocator below the limit)
// is quiet.
func TestCgroupOOMKillsReal(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	dir := memcgOfTest(t, 32<<20)
	cg := strings.TrimPrefix(dir, v1Memory)
	run := func(mib int) (pid int, err error) {
		alloc := fmt.Sprintf(`b = [b"x" * (1 << 20) for i in range(%d)]`, mib)
		cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("echo $$ > %s/cgroup.procs && exec python3 -c '%s'", dir, alloc))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd.Process.Pid, cmd.Wait()
	}
	if _, err := run(8); err != nil {
		t.Fatalf("8 MiB in a 32 MiB cgroup failed: %v", err)
	}
	if fs, _ := cgroupOOMFindings(t, cg); len(fs) != 0 {
		t.Fatalf("fired before any kill: %s", fs[0].Summary)
	}
	pid, err := run(1024)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the allocator was not OOM-killed: %v", err)
	}
	fs, kmsg := cgroupOOMFindings(t, cg)
	if len(fs) != 1 {
		t.Fatalf("cgroup_oom_kills found %d findings for %s, want 1", len(fs), cg)
	}
	t.Logf("%s: %s", fs[0].Subject, fs[0].Summary)
	var kills, rss, anon float64
	var victim string
	for _, e := range fs[0].Evidence {
		switch e.Name {
		case "oom_kills_since_created":
			kills = e.Value
		case "victim_1":
			victim = e.Text
		case "victim_1_rss_bytes":
			rss = e.Value
		case "victim_1_anon_rss_bytes":
			anon = e.Value
		}
	}
	if kills != 1 {
		t.Errorf("kills = %v, want 1: %+v", kills, fs[0].Evidence)
	}
	if !kmsg {
		return
	}
	// The kernel's report: the process the shell exec'd (its pid), killed
	// at this cgroup's limit, its anon RSS most of the 32 MiB it filled.
	want := fmt.Sprintf("python3 (pid %d) with RSS ", pid)
	if !strings.HasPrefix(victim, want) || !strings.Contains(fs[0].Summary, "the kernel log names "+want) {
		t.Errorf("victim %q, summary %q: want the kernel's report of %q", victim, fs[0].Summary, want)
	}
	if anon < 16<<20 || anon > 32<<20 || rss < anon {
		t.Errorf("victim's anon RSS %v, RSS %v: want anon between 16 and 32 MiB, within the RSS", anon, rss)
	}
}

// A kernel report is told by one finding: the pod's names the victims of
// its gone containers (their cgroups were not read), the live container's
// names its own, and neither names the other's.
func TestCgroupOOMKmsgToldOnce(t *testing.T) {
	t.Parallel()
	const pod = "/kubepods/burstable/pod0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b"
	c := parseCase(t, "testdata/cgroup_oom_kills/fire_v2_gone_container_kmsg.prom")
	r := diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, c.base), c), Source: "test"})
	victims := map[string][]string{}
	for _, f := range r.Findings {
		if f.ID != "cgroup_oom_kills" {
			continue
		}
		for _, e := range f.Evidence {
			if strings.HasPrefix(e.Name, "victim_") && e.Text != "" {
				who, _, _ := strings.Cut(e.Text, ")")
				cg := strings.TrimPrefix(f.Subject, "cgroup ")
				victims[cg] = append(victims[cg], who+")")
			}
		}
	}
	want := map[string][]string{
		pod: {"java (pid 4390)", "java (pid 4242)"},
		pod + "/crio-4a1f2c3d5e6b7a8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e": {"nginx (pid 5151)"},
	}
	if fmt.Sprint(victims) != fmt.Sprint(want) {
		t.Errorf("victims by cgroup %v, want %v", victims, want)
	}
}
