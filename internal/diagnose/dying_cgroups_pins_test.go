package diagnose_test

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/sample"
)

func evidenceOf(f *diagnose.Finding, name string) (diagnose.Evidence, bool) {
	for _, e := range f.Evidence {
		if e.Name == name {
			return e, true
		}
	}
	return diagnose.Evidence{}, false
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
	f := findingOf(diagnose.Check(apply(baseScrape(t, "dying-cgroups-6.18-x86_64-hybrid"), c), "test", nil), "dying_cgroups")
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

	base := baseScrape(t, "dying-cgroups-6.18-x86_64-hybrid")
	plain := findingOf(diagnose.Check(&base, "test", nil), "dying_cgroups")
	if plain == nil {
		t.Fatal("dying_cgroups did not fire without a page scan")
	}
	if _, ok := evidenceOf(plain, "pinned_page_cache_bytes"); ok || strings.Contains(plain.Summary, "pins them") {
		t.Errorf("without a page scan the finding claims what pins them: %s", plain.Summary)
	}
}
