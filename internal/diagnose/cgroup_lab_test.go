package diagnose_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/seriestest"
)

const (
	labPod     = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b7e1c2a_94d0_4f8e_a1b2_6c5d4e3f2a1b.slice/"
	labOOMed   = labPod + "cri-containerd-1f2e3d4c5b6a79880716253443526170f1e2d3c4b5a6978879605a4b3c2d1e0f.scope"
	labStalled = labPod + "cri-containerd-9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9.scope"
)

// subjects lists a rule's findings' subjects in a report.
func subjects(r *model.Report, id string) []string {
	var out []string
	for _, f := range r.Findings {
		if f.ID == id {
			out = append(out, strings.TrimPrefix(f.Subject, "cgroup "))
		}
	}
	return out
}

// The kernel lab's container captures (scenario 5): each cgroup rule names
// the cgroup its workload ran in, and no other: the page-cache service is
// quiet under every rule, the anon one is near its limit, the killed
// container has its kill, the throttled service and the stalled container
// theirs (the pod and QoS slices above the container are not told again).
func TestLabCapturesCgroupRules(t *testing.T) {
	t.Parallel()
	qs := baseSnapshot(t, "cgroups-quiet-6.1-x86_64-v2")
	quiet := diagnose.Run(diagnose.Data{Latest: &qs, Source: "test"})
	ss := baseSnapshot(t, "cgroups-stalled-6.1-x86_64-v2")
	stalled := diagnose.Run(diagnose.Data{Latest: &ss, Source: "test"})
	for _, c := range []struct {
		r    *model.Report
		name string
		id   string
		want string
	}{
		{quiet, "quiet", "cgroup_near_limit", "/system.slice/anon.service"},
		{quiet, "quiet", "cgroup_oom_kills", labOOMed},
		{quiet, "quiet", "cgroup_memory_high_throttled", ""},
		{quiet, "quiet", "cgroup_memory_pressure", ""},
		{stalled, "stalled", "cgroup_memory_high_throttled", "/system.slice/throttled.service"},
		{stalled, "stalled", "cgroup_memory_pressure", labStalled},
	} {
		got := strings.Join(subjects(c.r, c.id), " ")
		if got != c.want {
			t.Errorf("%s capture: %s about %q, want %q", c.name, c.id, got, c.want)
		}
	}
	f := findingOf(stalled, "cgroup_memory_high_throttled")
	cmds := commandsOf(f)
	for _, want := range []string{"systemctl set-property --runtime throttled.service MemoryHigh=41943040", "/sys/fs/cgroup/system.slice/throttled.service/memory.events.local"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("throttled.service remedies lack %q:\n%s", want, cmds)
		}
	}
	if !strings.Contains(commandsOf(findingOf(stalled, "cgroup_memory_pressure")), "--limits=memory=") {
		t.Errorf("the stalled container at its limit is not told to raise it:\n%s", commandsOf(findingOf(stalled, "cgroup_memory_pressure")))
	}
}

// The lab's capture read with the guest's own /dev/kmsg (saved beside it):
// cgroup_oom_kills names the victim the kernel killed at the container's
// limit, with its RSS and anon RSS.
func TestLabCgroupOOMVictim(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "testdata", "captures")
	fsys, prov, err := capture.LoadFile(filepath.Join(dir, "cgroups-quiet-6.1-x86_64-v2.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := collect.Collect(procfs.NewFSFrom(fsys, prov.PageSize), collect.Options{TopProcesses: 5, TopCgroups: 5,
		Now: func() time.Time { return prov.Time }, KmsgPath: filepath.Join(dir, "cgroups-quiet-6.1-x86_64-v2.kmsg")})
	if err != nil {
		t.Fatal(err)
	}
	f := findingOf(diagnose.Run(diagnose.Data{Latest: &res.Snapshot, Source: "test"}), "cgroup_oom_kills")
	if f == nil || f.Subject != "cgroup "+labOOMed {
		t.Fatalf("cgroup_oom_kills: %+v", f)
	}
	var victim string
	var anon float64
	for _, e := range f.Evidence {
		switch e.Name {
		case "victim_1":
			victim = e.Text
		case "victim_1_anon_rss_bytes":
			anon = e.Value
		}
	}
	// The report: anon-rss:65272kB, file-rss:4kB, shmem-rss:188kB.
	if victim != "hog (pid 127) with RSS 63.9 MiB (anon 63.7 MiB)" || anon != 65272<<10 || !strings.Contains(f.Summary, "the kernel log names hog (pid 127)") {
		t.Errorf("victim %q, anon %v, summary %q", victim, anon, f.Summary)
	}
}

// PSI is hierarchical: a container's stall shows in its pod's and QoS
// class' cgroups too; only the container is told.
func TestCgroupPressureTellsTheDeepest(t *testing.T) {
	t.Parallel()
	w := seriestest.MustParse(t, `interval 15s
memdoctor_cgroup_info{mode="v2",memory="v2"} 1x20
memdoctor_cgroup_memory_pressure_seconds_total{cgroup="/kubepods.slice",kind="some"} 0+4x20
memdoctor_cgroup_memory_pressure_seconds_total{cgroup="/kubepods.slice/pod-a.slice",kind="some"} 0+3x20
memdoctor_cgroup_memory_pressure_seconds_total{cgroup="/kubepods.slice/pod-a.slice/c1.scope",kind="some"} 0+3x20
memdoctor_cgroup_memory_pressure_seconds_total{cgroup="/kubepods.slice/pod-a.slice/c2.scope",kind="some"} 0+0.1x20
memdoctor_cgroup_memory_pressure_seconds_total{cgroup="/system.slice/web.service",kind="some"} 0+2x20
`)
	got := subjects(diagnose.Run(diagnose.Data{Window: w, Source: "test"}), "cgroup_memory_pressure")
	if strings.Join(got, " ") != "/kubepods.slice/pod-a.slice/c1.scope /system.slice/web.service" {
		t.Errorf("findings about %v", got)
	}
}
