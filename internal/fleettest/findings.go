package fleettest

import (
	"fmt"
	"math/rand/v2"

	"github.com/memdoctor/memdoctor/internal/model"
)

// HostFindings is one instance's findings in a synthetic scan's result.
type HostFindings struct {
	Instance string
	Findings []model.Finding
}

// HostileNames are instance names a page or a command must survive:
// markup, quotes, spaces, the separators of memdoctor's anchors, bytes
// outside ASCII, and two names that differ only in what an escaping
// could merge.
var HostileNames = []string{
	`<script>alert(1)</script>:9100`,
	`"><img src=x onerror=alert(1)>`,
	`host' onmouseover='alert(1)`,
	`a b`, `a~20b`, `a--b--dying_cgroups`, `#top`, `-rf`, `host-é:9100`, `x&amp;y`,
}

// Findings is a synthetic scan's findings at fleet scale: n instances
// (the hostile names among them), each with one to three of the rules a
// fleet scan judges, worded and sized as the rules word them (a summary
// of 90 to 200 bytes, the container rules naming up to five
// namespace/pod/container subjects), the same for the same n and seed.
// It is for what renders a large scan (a page's size, its index), not a
// verdict: no rule produced these.
func Findings(n int, seed uint64) []HostFindings {
	r := rand.New(rand.NewPCG(seed, 28))
	rules := []struct {
		id  string
		sev model.Severity
		say string
	}{
		{"dying_cgroups", model.Critical, "%d memory cgroups are dying (removed but still charged) and the count grew by %d a day for 3 days; they pin %s of unreclaimable slab"},
		{"slab_unreclaimable_growth", model.Warning, "unreclaimable slab grew by %d MiB a day for %d days (%s of memory now); the kernel cannot reclaim it"},
		{"watermark_thrash", model.Warning, "kswapd woke up %d times quickly and %d allocations stalled in direct reclaim in the last day; free memory sits at %s, near the low watermark"},
		{"memory_baseline_exceeded", model.Info, "memory use at its peak is %d%% above the median of the last 14 daily peaks (%d%% of %s)"},
		{"cgroup_near_limit", model.Warning, "the container's working set is at %d%% of its limit %d times in the range (%s limit): the next burst is reclaimed or killed"},
		{"cgroup_oom_kills", model.Critical, "the container was OOM-killed %d times in the range (%d restarts); its limit is %s"},
	}
	sizes := []string{"1.2 GiB", "384 MiB", "7.9 GiB", "62.5 GiB"}
	out := make([]HostFindings, 0, n)
	for i := range n {
		name := fmt.Sprintf("host-%05d.dc%d.example.net:9100", i, i%7)
		if i < len(HostileNames) {
			name = HostileNames[i]
		}
		h := HostFindings{Instance: name}
		for _, k := range r.Perm(len(rules))[:1+r.IntN(3)] {
			ru := rules[k]
			subjects := []string{name + " host"}
			if ru.id == "cgroup_near_limit" || ru.id == "cgroup_oom_kills" {
				subjects = subjects[:0]
				for c := range 1 + r.IntN(5) {
					subjects = append(subjects, fmt.Sprintf("ns-%d/app-%d-%08x/c%d", r.IntN(40), i, r.Uint32(), c))
				}
			}
			for _, s := range subjects {
				h.Findings = append(h.Findings, model.Finding{ID: ru.id, Severity: ru.sev, Subject: s,
					Summary: fmt.Sprintf(ru.say, 10+r.IntN(20000), 1+r.IntN(900), sizes[r.IntN(len(sizes))])})
			}
		}
		out = append(out, h)
	}
	return out
}
