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

func cgroupOOMFindings(t *testing.T, cg string) []model.Finding {
	t.Helper()
	res, err := collect.Collect(procfs.NewFS("/"), collect.Options{TopCgroups: 3, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	var fs []model.Finding
	for _, f := range diagnose.Run(diagnose.Data{Latest: &res.Snapshot, Source: "live", Notes: res.Notes}).Findings {
		if f.ID == "cgroup_oom_kills" && f.Subject == "cgroup "+cg {
			fs = append(fs, f)
		}
	}
	return fs
}

// TestCgroupOOMKillsReal: a Python allocator in a 32 MiB cgroup of the
// test's own is OOM-killed; the rule names that cgroup and its one kill.
// Before the kill, the same cgroup (with its allocator below the limit)
// is quiet.
func TestCgroupOOMKillsReal(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	dir := memcgOfTest(t, 32<<20)
	cg := strings.TrimPrefix(dir, v1Memory)
	run := func(mib int) error {
		alloc := fmt.Sprintf(`b = [b"x" * (1 << 20) for i in range(%d)]`, mib)
		return exec.Command("/bin/sh", "-c", fmt.Sprintf("echo $$ > %s/cgroup.procs && exec python3 -c '%s'", dir, alloc)).Run()
	}
	if err := run(8); err != nil {
		t.Fatalf("8 MiB in a 32 MiB cgroup failed: %v", err)
	}
	if fs := cgroupOOMFindings(t, cg); len(fs) != 0 {
		t.Fatalf("fired before any kill: %s", fs[0].Summary)
	}
	err := run(1024)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the allocator was not OOM-killed: %v", err)
	}
	fs := cgroupOOMFindings(t, cg)
	if len(fs) != 1 {
		t.Fatalf("cgroup_oom_kills found %d findings for %s, want 1", len(fs), cg)
	}
	var kills float64
	for _, e := range fs[0].Evidence {
		if e.Name == "oom_kills_since_created" {
			kills = e.Value
		}
	}
	if kills != 1 {
		t.Errorf("kills = %v, want 1: %+v", kills, fs[0].Evidence)
	}
	t.Logf("%s: %s", fs[0].Subject, fs[0].Summary)
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
