package lab_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/lab"
)

// Scenario 5 on a real 6.1 kernel with pure cgroup v2: a systemd-like
// hierarchy (system.slice with services) and a Kubernetes-like one
// (kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
// with two cri-containerd scopes), with limits, and one workload per
// behaviour: page cache over memory.high stays quiet; anon at memory.max
// fires cgroup_near_limit; the container grown past its memory.max fires
// cgroup_oom_kills naming the victim from /dev/kmsg; a service allocating
// in a loop over its memory.high fires cgroup_memory_high_throttled; the
// container re-reading a file at its memory.max with most of it anon fires
// cgroup_memory_pressure, in check and in diagnose of a 2 s recording.
// check --cgroup focuses on one cgroup by its unit name and lists close
// matches for a name that matches none. The captures are the rules'
// testdata (MEMDOCTOR_LAB_CAPTURES).
func TestCgroupRulesV2(t *testing.T) {
	slowScenario(t)
	l := lab.Open(t)
	start := time.Now()
	res := l.Boot(t, lab.Run{Script: scenario(t, "containers.sh"), Timeout: 10 * time.Minute})
	t.Logf("scenario 5 (container cgroups): %.1fs wall", time.Since(start).Seconds())
	if res.Exit != 0 {
		t.Fatalf("scenario exit %d\n%s", res.Exit, res.Log)
	}
	saveCaptures(t, res, map[string]string{"quiet.txtar": "cgroups-quiet-6.1-x86_64-v2.txtar", "stalled.txtar": "cgroups-stalled-6.1-x86_64-v2.txtar"})
	if dir := os.Getenv("MEMDOCTOR_LAB_CAPTURES"); dir != "" {
		// The kernel log beside the capture: the OOM report names the victim.
		if err := os.WriteFile(filepath.Join(dir, "cgroups-quiet-6.1-x86_64-v2.kmsg"), []byte(res.File(t, "kmsg")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const (
		sys   = "/system.slice/"
		pod   = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b7e1c2a_94d0_4f8e_a1b2_6c5d4e3f2a1b.slice/"
		oomed = "cgroup " + pod + "cri-containerd-1f2e3d4c5b6a79880716253443526170f1e2d3c4b5a6978879605a4b3c2d1e0f.scope"
		stall = "cgroup " + pod + "cri-containerd-9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9.scope"
	)
	for _, name := range []string{"throttled", "cache", "pressure"} {
		t.Logf("%s: events.local %q pressure %q", name, strings.ReplaceAll(res.File(t, name+".memory.events.local"), "\n", " "),
			strings.ReplaceAll(res.File(t, name+".memory.pressure"), "\n", " "))
	}

	quiet := readReport(t, res, "quiet.json")
	for _, f := range quiet.Findings {
		t.Logf("quiet.json: %s %s %s: %s", f.Severity, f.ID, f.Subject, f.Summary)
	}
	if f := quiet.about("cgroup_near_limit", "cgroup "+sys+"anon.service"); f == nil {
		t.Errorf("quiet.json: cgroup_near_limit did not fire on 60M of anon at memory.max 64M")
	}
	for _, id := range []string{"cgroup_near_limit", "cgroup_memory_high_throttled", "cgroup_memory_pressure"} {
		if f := quiet.about(id, "cgroup "+sys+"cache.service"); f != nil {
			t.Errorf("quiet.json: %s fired on page cache over memory.high: %s", id, f.Summary)
		}
	}
	if f := quiet.about("cgroup_oom_kills", oomed); f == nil {
		t.Errorf("quiet.json: cgroup_oom_kills did not fire on the killed container")
	} else if v := textEvidence(f, "victim_1"); !strings.HasPrefix(v, "hog (pid ") {
		t.Errorf("cgroup_oom_kills names the victim %q, want hog", v)
	}

	for _, name := range []string{"stalled.json", "diagnose.json"} {
		r := readReport(t, res, name)
		for _, f := range r.Findings {
			t.Logf("%s: %s %s %s: %s", name, f.Severity, f.ID, f.Subject, f.Summary)
		}
		if f := r.about("cgroup_memory_high_throttled", "cgroup "+sys+"throttled.service"); f == nil {
			t.Errorf("%s: cgroup_memory_high_throttled did not fire on throttled.service", name)
		} else if !strings.Contains(commands(f), "systemctl set-property --runtime throttled.service MemoryHigh=") {
			t.Errorf("%s: no MemoryHigh remedy for the unit:\n%s", name, commands(f))
		}
		if f := r.about("cgroup_memory_pressure", stall); f == nil {
			t.Errorf("%s: cgroup_memory_pressure did not fire on the stalled container", name)
		}
		if f := r.about("cgroup_memory_high_throttled", "cgroup "+sys+"cache.service"); f != nil {
			t.Errorf("%s: cgroup_memory_high_throttled fired on page cache over memory.high: %s", name, f.Summary)
		}
	}

	// check --cgroup by the unit's name: that cgroup's accounting, limits,
	// events and pressure, and only the findings about it.
	var focus struct {
		report
		Cgroup struct {
			Cgroup      string                        `json:"cgroup"`
			Limits      map[string]int64              `json:"limits"`
			EventsLocal map[string]int64              `json:"events_local"`
			Pressure    map[string]map[string]float64 `json:"pressure"`
			Stat        map[string]int64              `json:"stat"`
		} `json:"cgroup"`
	}
	if err := json.Unmarshal([]byte(res.File(t, "focus.json")), &focus); err != nil {
		t.Fatal(err)
	}
	c := focus.Cgroup
	if c.Cgroup != sys+"throttled.service" || c.Limits["high"] != 32<<20 || c.Limits["max"] != 256<<20 || c.EventsLocal["high"] == 0 ||
		c.Pressure["some"]["avg10"] <= 0 || c.Stat["anon"] <= 0 {
		t.Errorf("check --cgroup throttled.service: %+v", c)
	}
	if focus.about("cgroup_memory_high_throttled", "cgroup "+sys+"throttled.service") == nil {
		t.Errorf("check --cgroup throttled.service: not told it is throttled: %+v", focus.Findings)
	}
	for _, f := range focus.Findings {
		if f.Subject != "cgroup "+sys+"throttled.service" {
			t.Errorf("check --cgroup throttled.service shows a finding about %s", f.Subject)
		}
	}
	if e := res.File(t, "nomatch.err"); !strings.Contains(e, "close: "+sys+"throttled.service") || !strings.Contains(e, "nomatch exit 1") {
		t.Errorf("check --cgroup throtled.service: %q", e)
	}
}

func textEvidence(f *finding, name string) string {
	for _, e := range f.Evidence {
		if e.Name == name {
			return e.Text
		}
	}
	return ""
}

func commands(f *finding) string {
	var cmds []string
	for _, r := range f.Remedies {
		cmds = append(cmds, r.Commands...)
	}
	return strings.Join(cmds, "\n")
}
