package lab_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/lab"
)

// Scenario 1 on a real 6.1 kernel with pure cgroup v2: a job runner that
// reclaims each job's cgroup before removing it stays quiet; one that
// removes them while their page cache lives makes dying_cgroups fire with
// the kernel's own count, in check and in diagnose of a recording; and
// memdoctor reclaim --apply, writing the parent's memory.reclaim, frees them.
func TestDyingCgroupsV2(t *testing.T) {
	slowScenario(t)
	l := lab.Open(t)
	start := time.Now()
	res := l.Boot(t, lab.Run{Script: "JOBS=120 KIB=256\n" + scenario(t, "dying-cgroups.sh"), Timeout: 10 * time.Minute})
	t.Logf("scenario 1 (dying cgroups): %.1fs wall", time.Since(start).Seconds())
	if res.Exit != 0 {
		t.Fatalf("scenario exit %d\n%s", res.Exit, res.Log)
	}

	saveCaptures(t, res, map[string]string{"healthy.txtar": "healthy-6.1-x86_64-v2.txtar", "dying-cgroups.txtar": "dying-cgroups-6.1-x86_64-v2.txtar"})

	healthy := readReport(t, res, "healthy.json")
	// The guest's hostname is never set (the kernel says "(none)").
	if healthy.Host.Hostname != "localhost" {
		t.Errorf("hostname %q, want localhost", healthy.Host.Hostname)
	}
	if d := res.File(t, "diagnose.json"); strings.Contains(d, "(none)") {
		t.Errorf("diagnose of the recording calls the host \"(none)\"")
	}
	if healthy.Cgroups.Mode != "v2" {
		t.Errorf("cgroup mode %q, want v2", healthy.Cgroups.Mode)
	}
	if d := statValue(t, res, "stat.healthy", "nr_dying_descendants"); d > 10 {
		t.Errorf("healthy job runner left %d dying cgroups", d)
	}
	for _, f := range healthy.Findings {
		if f.ID == "dying_cgroups" || f.Severity == "warning" || f.Severity == "critical" {
			t.Errorf("healthy run: %s %s: %s", f.Severity, f.ID, f.Summary)
		}
	}

	kernelDying := statValue(t, res, "stat.before", "nr_dying_descendants")
	if kernelDying < 120 {
		t.Fatalf("the kernel counts %d dying cgroups after 120 leaky jobs", kernelDying)
	}
	for _, name := range []string{"dying.json", "diagnose.json"} {
		r := readReport(t, res, name)
		f := r.finding("dying_cgroups")
		if f == nil {
			t.Errorf("%s: dying_cgroups did not fire: %+v", name, r.Findings)
			continue
		}
		if n, _ := f.evidence("memory_cgroups_dying"); int64(n) != kernelDying {
			t.Errorf("%s: memory_cgroups_dying %v, kernel's nr_dying_descendants %d", name, n, kernelDying)
		}
		var cmds []string
		for _, rm := range f.Remedies {
			cmds = append(cmds, rm.Commands...)
		}
		if !strings.Contains(strings.Join(cmds, "\n"), "memdoctor reclaim --apply") {
			t.Errorf("%s: no reclaim remedy on 6.1 v2: %q", name, cmds)
		}
	}

	// The charge /jobs' dying descendants hold: its usage less its one
	// live child's, each read by the scenario beside check.
	var focus struct {
		Cgroup struct {
			OOM struct {
				Dying            *int64 `json:"dying_bytes"`
				DyingDescendants *int64 `json:"dying_descendants"`
			} `json:"oom"`
		} `json:"cgroup"`
	}
	if err := json.Unmarshal([]byte(res.File(t, "focus.json")), &focus); err != nil {
		t.Fatal(err)
	}
	jobs, live := intFile(t, res, "jobs.current"), intFile(t, res, "live.current")
	if d := focus.Cgroup.OOM.Dying; d == nil || focus.Cgroup.OOM.DyingDescendants == nil {
		t.Errorf("check --cgroup /jobs: no charge of dying descendants: %s", res.File(t, "focus.json"))
	} else {
		t.Logf("/jobs: usage %d, live child %d, dying charge %d from %d dying descendants", jobs, live, *d, *focus.Cgroup.OOM.DyingDescendants)
		if want := jobs - live; *d < want-1<<20 || *d > want+1<<20 {
			t.Errorf("dying charge %d, want /jobs' usage %d less its live child's %d (±1 MiB)", *d, jobs, live)
		}
		if *d < 100*256<<10 || live < 4<<20 {
			t.Errorf("dying charge %d, live child %d: want most of the 120 jobs' 256 KiB and the child's 4 MiB", *d, live)
		}
		if *focus.Cgroup.OOM.DyingDescendants < kernelDying {
			t.Errorf("dying descendants %d, the kernel's nr_dying_descendants %d", *focus.Cgroup.OOM.DyingDescendants, kernelDying)
		}
	}
	if txt := res.File(t, "focus.txt"); !strings.Contains(txt, "  dying: its ") {
		t.Errorf("check --cgroup /jobs has no dying line:\n%s", txt)
	}

	var dry, applied struct {
		Plan struct {
			Dying   int64 `json:"dying"`
			Targets []struct {
				Path  string `json:"path"`
				Dying int64  `json:"dying"`
				Bytes int64  `json:"bytes"`
			} `json:"targets"`
		} `json:"plan"`
		Result struct {
			Before int64 `json:"dying_before"`
			After  int64 `json:"dying_after"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(res.File(t, "reclaim-dry.json")), &dry); err != nil {
		t.Fatal(err)
	}
	if len(dry.Plan.Targets) != 1 || dry.Plan.Targets[0].Path != "/jobs" || dry.Plan.Targets[0].Dying < 120 ||
		dry.Plan.Targets[0].Bytes < 120*256<<10 {
		t.Errorf("dry run plan: %+v", dry.Plan)
	}
	if d := statValue(t, res, "stat.dry", "nr_dying_descendants"); d < kernelDying {
		t.Errorf("the dry run changed the host: %d dying before, %d after", kernelDying, d)
	}
	if err := json.Unmarshal([]byte(res.File(t, "reclaim.json")), &applied); err != nil {
		t.Fatal(err)
	}
	after := statValue(t, res, "stat.after", "nr_dying_descendants")
	t.Logf("reclaim --apply: dying %d → %d (kernel after: %d)", applied.Result.Before, applied.Result.After, after)
	// On 6.1 a few stay (8 of 120 in trials): held by per-CPU charge
	// caches and the like, not by cache reclaim can drop.
	if after*4 > kernelDying {
		t.Errorf("reclaim --apply left %d of %d dying cgroups", after, kernelDying)
	}
	if applied.Result.After*4 > kernelDying {
		t.Errorf("reclaim reports %d after, the kernel %d", applied.Result.After, after)
	}
	if f := readReport(t, res, "after.json").finding("dying_cgroups"); f != nil {
		t.Errorf("dying_cgroups still fires after the remedy: %s", f.Summary)
	}
}

// intFile reads a file of one number the guest copied out.
func intFile(t *testing.T, res *lab.Result, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(strings.TrimSpace(res.File(t, name)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}
