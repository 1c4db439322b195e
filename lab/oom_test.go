package lab_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/lab"
)

// Scenario 4: a process outgrows its cgroup's memory.max and is killed.
// memory.events and /proc/vmstat count the kill, memdoctor's oom_kills
// fires in check and in diagnose of a recording, and the kernel's own
// report, read from the guest's /dev/kmsg, names the victim, its RSS, the
// cgroup and its limit. The recorder's CPU time and peak RSS while
// recording at 1 s are logged.
func TestOOMKillInCgroup(t *testing.T) {
	slowScenario(t)
	l := lab.Open(t)
	start := time.Now()
	res := l.Boot(t, lab.Run{Script: scenario(t, "oom-kill.sh"), Timeout: 8 * time.Minute})
	t.Logf("scenario 4 (OOM kill): %.1fs wall", time.Since(start).Seconds())
	if res.Exit != 0 {
		t.Fatalf("scenario exit %d\n%s", res.Exit, res.Log)
	}
	if n := statValue(t, res, "memory.events", "oom_kill"); n != 1 {
		t.Errorf("memory.events oom_kill %d, want 1", n)
	}
	if n := statValue(t, res, "vmstat.oom", "oom_kill"); n != 1 {
		t.Errorf("vmstat oom_kill %d, want 1", n)
	}
	for _, name := range []string{"check.json", "diagnose.json"} {
		if f := readReport(t, res, name).finding("oom_kills"); f == nil {
			t.Errorf("%s: oom_kills did not fire", name)
		}
	}
	kmsg := res.File(t, "kmsg")
	if dir := os.Getenv("MEMDOCTOR_LAB_KMSG"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "kmsg-oom-memcg-6.1.txt"), []byte(kmsg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Scenario 3, PSI (on by default in this kernel): collected, and the
	// stall of the cgroup at its limit shows host-wide.
	var psi struct {
		Reclaim struct {
			PSISome float64 `json:"psi_some_avg60_percent"`
		} `json:"reclaim"`
	}
	if err := json.Unmarshal([]byte(res.File(t, "check.json")), &psi); err != nil {
		t.Fatal(err)
	}
	if psi.Reclaim.PSISome < 0 {
		t.Errorf("check did not collect /proc/pressure/memory")
	}
	if p := res.File(t, "psi"); !strings.HasPrefix(p, "some ") || strings.Contains(strings.SplitN(p, "\n", 2)[0], "total=0") {
		t.Errorf("no memory stall recorded by PSI during the OOM: %q", p)
	}
	t.Logf("PSI after the kill: %s; check: some avg60 %.2f%%", strings.SplitN(res.File(t, "psi"), "\n", 2)[0], psi.Reclaim.PSISome)
	reps := procfs.ParseOOMReports([]byte(kmsg))
	if len(reps) != 1 {
		t.Fatalf("%d OOM reports in /dev/kmsg, want 1:\n%s", len(reps), res.File(t, "kmsg"))
	}
	r := reps[0]
	if r.Task != "hog" || r.MemCG != "/oomtest" || r.TaskMemCG != "/oomtest" || r.Constraint != "CONSTRAINT_MEMCG" ||
		r.LimitKB != 64<<10 || r.RSSKB() < 32<<10 || r.RSSKB() > r.LimitKB+8<<10 || r.PID <= 1 || r.TimeUsec <= 0 {
		t.Errorf("OOM report %+v", r)
	}
	// The recorder's own cost.
	if cpu, ran, peak := recorderCost(t, res, "recorder.cost"); ran > 0 {
		t.Logf("recorder at 1 s in the 1 GB guest: %.2fs CPU over %.1fs (%.1f%% of a CPU), peak RSS %.0f MiB",
			cpu, ran, 100*cpu/ran, float64(peak)/(1<<20))
	}
}
