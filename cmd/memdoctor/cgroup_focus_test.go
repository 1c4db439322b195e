package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// TestCheckCgroupFocus: a unit-like memory cgroup of the test's own, with
// a 64 MiB limit and a process holding 56 MiB of anon in it, is the whole
// report of check --cgroup, named by its unit, by its path or by its path
// under /sys/fs/cgroup: its limits, charge and events, and only the
// findings about it (its working set near the limit among them). A name
// one letter off fails, listing the cgroup as a close match. An idle
// sibling, which check would not read in full, is read when focused on.
func TestCheckCgroupFocus(t *testing.T) {
	root := v1Root(t)
	unit := fmt.Sprintf("memdoctor-focus-%d-%d.service", os.Getpid(), time.Now().UnixNano()%1e6)
	parent := filepath.Join(root, fmt.Sprintf("memdoctor-focus-%d.slice", os.Getpid()))
	dir := filepath.Join(parent, unit)
	liveCgroup(t, root, strings.TrimPrefix(dir, root+"/"))
	// idle: no process and no limit, so never among the cgroups check
	// reads in full unless focused on (removed before its parent).
	idle := filepath.Join(parent, "idle-"+unit)
	if err := os.Mkdir(idle, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(idle) })
	cg := strings.TrimPrefix(dir, root)

	for _, q := range []string{unit, cg, dir} {
		start := time.Now()
		stdout, stderr, code := runCLI(t, "check", "--json", "--top", "0", "--cgroup", q)
		took := time.Since(start)
		if code != 0 {
			t.Fatalf("check --cgroup %s: exit %d: %s", q, code, stderr)
		}
		var r model.Report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		t.Logf("check --cgroup %s: %v", q, took)
		d := r.Cgroup
		if d == nil {
			t.Fatalf("check --cgroup %s: no cgroup in the report", q)
		}
		if d.Cgroup != cg || d.Limits["max"] != 64<<20 || d.UsageBytes < 56<<20 || d.Stat["anon"] < 50<<20 {
			t.Errorf("check --cgroup %s: %+v", q, d)
		}
		if d.Owner == nil || d.Owner.Unit != unit {
			t.Errorf("check --cgroup %s: owner %+v, want unit %s", q, d.Owner, unit)
		}
		if _, ok := d.Events["max"]; !ok {
			t.Errorf("check --cgroup %s: no limit hits (failcnt) among its events: %v", q, d.Events)
		}
		near := false
		for _, f := range r.Findings {
			if f.Subject != "cgroup "+cg {
				t.Errorf("check --cgroup %s: a finding about %s: %s", q, f.Subject, f.Summary)
			}
			near = near || f.ID == "cgroup_near_limit"
		}
		if !near || d.Findings != len(r.Findings) {
			t.Errorf("check --cgroup %s: findings %+v (counted %d), want its working set near the limit", q, r.Findings, d.Findings)
		}
	}

	stdout, stderr, code := runCLI(t, "check", "--top", "0", "--cgroup", unit)
	if code != 0 && code != 2 {
		t.Fatalf("check --cgroup %s: exit %d: %s", unit, code, stderr)
	}
	for _, want := range []string{"CGROUP " + unit + " (" + cg + ")", "limits: max 64.0 MiB\n", ", peak ", "findings about it: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check --cgroup %s: no %q in\n%s", unit, want, stdout)
		}
	}

	r := checkJSON(t, "--top", "0", "--cgroup", "idle-"+unit)
	if r.Cgroup == nil || r.Cgroup.Cgroup != strings.TrimPrefix(idle, root) || r.Cgroup.PeakBytes == nil {
		t.Errorf("check --cgroup idle-%s: %+v", unit, r.Cgroup)
	} else if _, ok := r.Cgroup.Limits["max"]; ok {
		t.Errorf("check --cgroup idle-%s: a limit where none is set: %v", unit, r.Cgroup.Limits)
	}
	if len(r.Findings) != 0 {
		t.Errorf("check --cgroup idle-%s: findings %+v", unit, r.Findings)
	}

	typo := strings.Replace(unit, "focus", "focs", 1)
	_, stderr, code = runCLI(t, "check", "--cgroup", typo)
	if code == 0 || !strings.Contains(stderr, "no memory cgroup has this path or name") || !strings.Contains(stderr, "close: "+cg) {
		t.Errorf("check --cgroup %s: exit %d, stderr %q; want an error with %s as a close match", typo, code, stderr, cg)
	}
}

// TestCheckCgroupFocusCapture: check --cgroup on the kernel lab's capture
// (cgroup v2): a systemd unit, a container by its id's first 12 digits and
// a pod by its uid each give that cgroup's accounting, limits, events and
// pressure and only the findings about it; a path of none fails with close
// matches.
func TestCheckCgroupFocusCapture(t *testing.T) {
	t.Parallel()
	c := capturePath(t, "cgroups-stalled-6.1-x86_64-v2")
	const pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b7e1c2a_94d0_4f8e_a1b2_6c5d4e3f2a1b.slice"
	for _, tc := range []struct {
		q, path string
		finding string
	}{
		{"throttled.service", "/system.slice/throttled.service", "cgroup_memory_high_throttled"},
		{"9a8b7c6d5e4f", pod + "/cri-containerd-9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9.scope", "cgroup_memory_pressure"},
		{"pod 3b7e1c2a-94d0-4f8e-a1b2-6c5d4e3f2a1b", pod, ""},
	} {
		r := checkJSON(t, "--capture", c, "--top", "0", "--cgroup", tc.q)
		d := r.Cgroup
		if d == nil || d.Cgroup != tc.path || d.UsageBytes <= 0 || d.Pressure["some"]["avg60"] <= 0 || len(d.Events) == 0 {
			t.Errorf("--cgroup %q: %+v", tc.q, d)
			continue
		}
		var ids []string
		for _, f := range r.Findings {
			ids = append(ids, f.ID)
			if f.Subject != "cgroup "+tc.path {
				t.Errorf("--cgroup %q: a finding about %s", tc.q, f.Subject)
			}
		}
		if tc.finding != "" && !slices.Contains(ids, tc.finding) {
			t.Errorf("--cgroup %q: findings %v, want %s", tc.q, ids, tc.finding)
		}
	}
	_, stderr, code := runCLI(t, "check", "--capture", c, "--cgroup", "/system.slice/throtled.service")
	if code == 0 || !strings.Contains(stderr, "no such cgroup") || !strings.Contains(stderr, "close: /system.slice/throttled.service") {
		t.Errorf("a misspelt path: exit %d, %q", code, stderr)
	}
}

// TestCheckCgroupFocusJoinedV1Mount: on a v1 host whose memory controller
// shares its hierarchy with cpu (mounted at /sys/fs/cgroup/cpu,memory, as
// some distributions do), check --cgroup finds a memory cgroup by its name
// where the collector reads it: from mountinfo, not from a fixed path. The
// hybrid capture is rewritten to that layout.
func TestCheckCgroupFocusJoinedV1Mount(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(capturePath(t, "dying-cgroups-6.18-x86_64-hybrid"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range [][2]string{
		{"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n", ""},
		{" /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n", " /sys/fs/cgroup/cpu,memory rw,relatime - cgroup cgroup rw,cpu,memory\n"},
		{"\n-- sys/fs/cgroup/memory/", "\n-- sys/fs/cgroup/cpu,memory/"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("the capture has no %q", r[0])
		}
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	c := filepath.Join(t.TempDir(), "joined.txtar")
	if err := os.WriteFile(c, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	r := checkJSON(t, "--capture", c, "--top", "0", "--cgroup", "process_api")
	if d := r.Cgroup; d == nil || d.Cgroup != "/process_api" || d.UsageBytes <= 0 || len(d.Stat) == 0 {
		t.Fatalf("--cgroup process_api on a cpu,memory hierarchy: %+v", d)
	}
}
