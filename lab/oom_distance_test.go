package lab_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/lab"
)

// oomDistanceTolerance is how far, in MiB, the allocation the OOM kill
// comes at may be from the distance memdoctor gave: each MiB allocated
// also costs its page tables and the allocator's headers, and the kernel
// reclaims the little page cache the cgroup holds before it kills.
const oomDistanceTolerance = 2

// Scenario 6: the distance to the OOM kill, on a real 6.1 kernel with
// cgroup v2. A process in /anon (memory.max 64M) holds 24 MiB of anon;
// check gives the cgroup's distance; the process then adds one
// MiB at a time until the OOM killer kills it, which must come at the
// distance, within oomDistanceTolerance MiB. /cache, at the same limit,
// full of page cache read from a 96 MiB file, is far from the kill by
// memdoctor's distance, not killed, and cgroup_oom_imminent stays quiet
// on it.
func TestOOMDistanceV2(t *testing.T) {
	slowScenario(t)
	l := lab.Open(t)
	start := time.Now()
	res := l.Boot(t, lab.Run{Script: scenario(t, "oom-distance.sh"), Timeout: 5 * time.Minute})
	t.Logf("scenario 6 (OOM distance): %.1fs wall, guest up %.1fs at the scenario's start", time.Since(start).Seconds(), res.Uptime)
	if res.Exit != 0 {
		t.Fatalf("scenario exit %d\n%s", res.Exit, res.Log)
	}
	t.Logf("guest uptime at the scenario's end: %ss (%.1fs at its start)", strings.TrimSpace(res.File(t, "uptime.end")), res.Uptime)
	var rep model.Report
	if err := json.Unmarshal([]byte(res.File(t, "check.json")), &rep); err != nil {
		t.Fatalf("check.json: %v", err)
	}
	oomOf := func(cg string) *model.OOMMemory {
		for _, u := range rep.Cgroups.Top {
			if u.Cgroup == cg && u.OOM != nil && u.OOM.DistanceBytes != nil {
				return u.OOM
			}
		}
		t.Fatalf("check.json: no distance to the OOM kill for %s", cg)
		return nil
	}
	const mib = 1 << 20
	a, c := oomOf("/anon"), oomOf("/cache")
	d := float64(*a.DistanceBytes) / mib
	lines := strings.Fields(res.File(t, "creep.out"))
	if len(lines) < 2 || lines[0] != "ready" {
		t.Fatalf("creep wrote %q", lines)
	}
	last, err := strconv.Atoi(lines[len(lines)-1])
	if err != nil {
		t.Fatalf("creep's last line %q", lines[len(lines)-1])
	}
	// creep wrote n after its n-th MiB: the kill came during the next one.
	killedAt := float64(last + 1)
	t.Logf("/anon: unreclaimable %.1f MiB (anon %.1f, kernel %.1f), distance %.1f MiB; the OOM kill came at the %.0fth MiB added",
		float64(a.UnreclaimableBytes)/mib, float64(a.AnonBytes)/mib, float64(a.KernelBytes)/mib, d, killedAt)
	if diff := killedAt - d; diff > oomDistanceTolerance || diff < -oomDistanceTolerance {
		t.Errorf("the kill came at %.0f MiB added, memdoctor's distance was %.1f MiB: off by more than %d MiB", killedAt, d, oomDistanceTolerance)
	}
	if ev := res.File(t, "anon.events"); !strings.Contains(ev, "oom_kill 1") {
		t.Errorf("/anon memory.events: %q, want one kill", ev)
	}
	if !strings.Contains(res.File(t, "creep.exit"), "creep exit 137") {
		t.Errorf("creep: %q, want killed by SIGKILL", res.File(t, "creep.exit"))
	}
	t.Logf("/cache: usage %.1f MiB, page cache %.1f MiB (inactive %.1f), unreclaimable %.1f MiB, distance %.1f MiB",
		float64(c.UsageBytes)/mib, float64(c.ActiveFileBytes+c.InactiveFileBytes)/mib, float64(c.InactiveFileBytes)/mib,
		float64(c.UnreclaimableBytes)/mib, float64(*c.DistanceBytes)/mib)
	if c.UsageBytes < 48*mib || *c.DistanceBytes < 56*mib {
		t.Errorf("/cache: usage %d, distance %d: want it full of page cache and far from the kill", c.UsageBytes, *c.DistanceBytes)
	}
	if ev := res.File(t, "cache.events"); !strings.Contains(ev, "oom_kill 0") {
		t.Errorf("/cache memory.events: %q, want no kill", ev)
	}
	for _, f := range rep.Findings {
		if f.ID == "cgroup_oom_imminent" && f.Subject == "cgroup /cache" {
			t.Errorf("cgroup_oom_imminent fired on the page cache cgroup: %s", f.Summary)
		}
	}
}
