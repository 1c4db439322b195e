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
