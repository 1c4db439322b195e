package diagnose_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// On cgroup v1 the dying-cgroups finding offers memory.force_empty on the
// live cgroup above the dying ones, through memdoctor reclaim (dry run
// first): the page scan's cgroup, its name one shell word whatever it
// holds, or PARENT without a scan.
func TestDyingV1OffersForceEmpty(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	const parent = "/jobs $(touch x) it's"
	for _, c := range []struct {
		name  string
		scan  bool
		wants string
	}{{"page scan", true, parent}, {"no scan", false, "PARENT"}} {
		rc := ruleCase{overrides: []sample.Metric{{Name: "memdoctor_cgroup_info", Labels: sample.L("memory", "v1", "mode", "v1"), Value: 1}},
			drops: []string{"memdoctor_cgroup_info"}}
		if c.scan {
			rc.overrides = append(rc.overrides,
				sample.Metric{Name: "memdoctor_memcg_dying_pinned_bytes", Labels: sample.L("type", "file"), Value: 300 << 20},
				sample.Metric{Name: "memdoctor_memcg_dying_pinned_ancestor_bytes", Labels: sample.L("cgroup", parent, "type", "file"), Value: 300 << 20},
				sample.Metric{Name: "memdoctor_pagescan_complete", Value: 1})
		}
		f := findingOf(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, "dying-cgroups-6.18-x86_64-hybrid"), rc), Source: "test"}), "dying_cgroups")
		if f == nil {
			t.Fatalf("%s: dying_cgroups did not fire", c.name)
		}
		var dry, apply string
		var risk string
		for _, r := range f.Remedies {
			for _, cmd := range r.Commands {
				if !strings.HasPrefix(cmd, "memdoctor reclaim --cgroup ") {
					continue
				}
				risk = r.Risk
				cmd = strings.TrimSpace(strings.SplitN(cmd, "   #", 2)[0])
				if strings.HasSuffix(cmd, " --apply") {
					apply = cmd
				} else {
					dry = cmd
				}
			}
		}
		if dry == "" || apply == "" {
			t.Fatalf("%s: no memdoctor reclaim --cgroup dry run and --apply among the remedies: %+v", c.name, f.Remedies)
		}
		if !strings.Contains(risk, "live memory") || !strings.Contains(risk, "force_empty") {
			t.Errorf("%s: the risk does not say force_empty takes a cgroup's live memory: %s", c.name, risk)
		}
		// The shell reads the cgroup as one word, unchanged.
		word := strings.TrimSuffix(strings.TrimPrefix(apply, "memdoctor reclaim --cgroup "), " --apply")
		if dry != "memdoctor reclaim --cgroup "+word {
			t.Errorf("%s: the dry run %q is not the --apply command %q without --apply", c.name, dry, apply)
		}
		out, err := exec.Command("sh", "-c", "printf '%s\\n' "+word, "sh").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(string(out), "\n"); got != c.wants {
			t.Errorf("%s: the shell reads the cgroup of %q as %q, want %q", c.name, apply, got, c.wants)
		}
	}
}
