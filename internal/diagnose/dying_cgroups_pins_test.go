package diagnose_test

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

func evidenceOf(f *model.Finding, name string) (model.Evidence, bool) {
	for _, e := range f.Evidence {
		if e.Name == name {
			return e, true
		}
	}
	return model.Evidence{}, false
}

// With a page scan (check --scan-pages) the finding says how much page
// cache pins the dying cgroups, where, and which of it drop_caches cannot
// free; without one it says nothing of the kind.
func TestDyingCgroupsNamesWhatPinsThem(t *testing.T) {
	t.Parallel()
	pinned := func(typ string, v float64) sample.Metric {
		return sample.Metric{Name: "memdoctor_memcg_dying_pinned_bytes", Labels: sample.L("type", typ), Value: v}
	}
	c := ruleCase{overrides: []sample.Metric{
		pinned("file", 400<<20), pinned("dirty", 24<<20), pinned("mapped", 0), pinned("shmem", 64<<20),
		pinned("writeback", 0), pinned("anon", 0),
		{Name: "memdoctor_memcg_dying_pinned_ancestor_bytes", Labels: sample.L("cgroup", "/jobs", "type", "file"), Value: 400 << 20},
		{Name: "memdoctor_pagescan_complete", Value: 1},
	}}
	f := findingOf(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, "dying-cgroups-6.18-x86_64-hybrid"), c), Source: "test"}), "dying_cgroups")
	if f == nil {
		t.Fatal("dying_cgroups did not fire on the dying-cgroups capture")
	}
	if e, ok := evidenceOf(f, "pinned_page_cache_bytes"); !ok || e.Value != 400<<20 {
		t.Errorf("pinned_page_cache_bytes = %+v", e)
	}
	if e, ok := evidenceOf(f, "pinned_shmem_bytes"); !ok || e.Value != 64<<20 {
		t.Errorf("pinned_shmem_bytes = %+v", e)
	}
	if e, ok := evidenceOf(f, "pinned_under"); !ok || !strings.HasPrefix(e.Text, "/jobs: ") {
		t.Errorf("pinned_under = %+v", e)
	}
	for _, want := range []string{"400 MiB of page cache pins them", "24.0 MiB dirty", "64.0 MiB shmem", "drop_caches cannot free"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, f.Summary)
		}
	}
	if strings.Contains(f.Summary, "mapped") {
		t.Errorf("summary names mapped pages the scan did not find: %s", f.Summary)
	}

	base := baseSnapshot(t, "dying-cgroups-6.18-x86_64-hybrid")
	plain := findingOf(diagnose.Run(diagnose.Data{Latest: &base, Source: "test"}), "dying_cgroups")
	if plain == nil {
		t.Fatal("dying_cgroups did not fire without a page scan")
	}
	if _, ok := evidenceOf(plain, "pinned_page_cache_bytes"); ok || strings.Contains(plain.Summary, "pins them") {
		t.Errorf("without a page scan the finding claims what pins them: %s", plain.Summary)
	}
}

// With a cgroup trace (check --trace) the finding names who made and removed
// the memory cgroups, busiest first, with rates over the trace; a trace that
// saw none says so and names nobody.
func TestDyingCgroupsNamesCreators(t *testing.T) {
	t.Parallel()
	ops := func(op, comm, unit string, n float64) sample.Metric {
		return sample.Metric{Name: "memdoctor_cgroup_trace_ops", Labels: sample.L("comm", comm, "op", op, "parent", "systemd", "unit", unit), Value: n}
	}
	secs := sample.Metric{Name: "memdoctor_cgroup_trace_seconds", Labels: sample.L("method", "bpf"), Value: 10}
	c := ruleCase{overrides: []sample.Metric{secs,
		ops("mkdir", "slowjob", "cron.service", 20), ops("rmdir", "slowjob", "cron.service", 20),
		ops("mkdir", "runner", "gitlab-runner.service", 250), ops("rmdir", "runner", "gitlab-runner.service", 240),
	}}
	f := findingOf(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, "dying-cgroups-6.18-x86_64-hybrid"), c), Source: "test"}), "dying_cgroups")
	if f == nil {
		t.Fatal("dying_cgroups did not fire on the dying-cgroups capture")
	}
	var lines []string
	for _, e := range f.Evidence {
		if e.Name == "creator" {
			lines = append(lines, e.Text)
		}
	}
	want := []string{
		"runner in gitlab-runner.service, parent systemd: 25 mkdir/s, 24 rmdir/s (250 and 240 in 10 s)",
		"slowjob in cron.service, parent systemd: 2 mkdir/s, 2 rmdir/s (20 and 20 in 10 s)",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("creators:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(f.Summary, "made and removed by runner (25/s), slowjob (2/s) in a trace of 10 s") {
		t.Errorf("summary: %s", f.Summary)
	}

	quiet := findingOf(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, "dying-cgroups-6.18-x86_64-hybrid"), ruleCase{overrides: []sample.Metric{secs}}), Source: "test"}), "dying_cgroups")
	if quiet == nil {
		t.Fatal("dying_cgroups did not fire")
	}
	if e, ok := evidenceOf(quiet, "creators"); !ok || !strings.Contains(e.Text, "no memory cgroup was created or removed during the 10 s trace") {
		t.Errorf("a trace without operations: %+v", quiet.Evidence)
	}
	if strings.Contains(quiet.Summary, "made and removed by") {
		t.Errorf("names creators the trace did not see: %s", quiet.Summary)
	}
}
