package diagnose_test

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
)

// The captures taken in the kernel lab (Debian's 6.1, cgroup v2 only):
// dying_cgroups fires on the job runner's 120 removed cgroups with the
// kernel's count and the v2 remedies, memory.reclaim among them; the idle
// guest is quiet.
func TestLabCapturesCgroupV2(t *testing.T) {
	t.Parallel()
	ds := baseSnapshot(t, "dying-cgroups-6.1-x86_64-v2")
	r := diagnose.Run(diagnose.Data{Latest: &ds, Source: "test"})
	f := findingOf(r, "dying_cgroups")
	if f == nil {
		t.Fatalf("dying_cgroups did not fire on the 6.1 v2 capture: %+v", r.Findings)
	}
	var dying float64
	var hier string
	for _, e := range f.Evidence {
		switch e.Name {
		case "memory_cgroups_dying":
			dying = e.Value
		case "memory_hierarchy":
			hier = e.Text
		}
	}
	if dying < 120 || dying > 130 || hier != "v2" {
		t.Errorf("evidence: %v dying, hierarchy %q", dying, hier)
	}
	cmds := commandsOf(f)
	for _, want := range []string{"/sys/fs/cgroup/JOB/memory.reclaim", "memdoctor reclaim --apply"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("remedies lack %q:\n%s", want, cmds)
		}
	}
	if strings.Contains(cmds, "force_empty") {
		t.Errorf("v1 remedy on a v2 host:\n%s", cmds)
	}
	hs := baseSnapshot(t, "healthy-6.1-x86_64-v2")
	q := diagnose.Run(diagnose.Data{Latest: &hs, Source: "test"})
	for _, f := range q.Findings {
		if f.Severity >= model.Warning {
			t.Errorf("idle 6.1 guest: %s %s", f.ID, f.Summary)
		}
	}
}

// A host whose name was never set (the lab guest: the kernel's nodename
// is "(none)") is called localhost, never "(none)".
func TestUnsetHostnameIsLocalhost(t *testing.T) {
	t.Parallel()
	s := baseSnapshot(t, "healthy-6.1-x86_64-v2")
	if u := s.Select("node_uname_info"); len(u) == 0 || u[0].Labels.Get("nodename") != model.UnsetHostName {
		t.Fatalf("the capture's nodename is not the kernel's unset name: %v", u)
	}
	if h := diagnose.Run(diagnose.Data{Latest: &s, Source: "test"}).Info.Hostname; h != "localhost" {
		t.Errorf("hostname %q, want localhost", h)
	}
	for in, want := range map[string]string{"(none)": "localhost", "": "localhost", "db-1": "db-1"} {
		if got := model.HostName(in); got != want {
			t.Errorf("HostName(%q) = %q, want %q", in, got, want)
		}
	}
}
