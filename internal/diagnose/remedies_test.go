package diagnose_test

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/seriestest"
)

func commandsOf(f *model.Finding) string {
	var b strings.Builder
	for _, r := range f.Remedies {
		b.WriteString(r.Title + "\n")
		for _, c := range r.Commands {
			b.WriteString("$ " + c + "\n")
		}
	}
	return b.String()
}

func findingOf(r *model.Report, id string) *model.Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

// dyingOn runs dying_cgroups on the real dying-cgroups capture as a host of
// the given kernel and memory-cgroup layout ("" drops the layout, as cron
// data without mountinfo has none).
func dyingOn(t *testing.T, kernel, layout string) *model.Finding {
	t.Helper()
	c := ruleCase{drops: []string{"node_uname_info", "memdoctor_cgroup_info"}}
	c.overrides = append(c.overrides, sample.Metric{Name: "node_uname_info",
		Labels: sample.L("machine", "x86_64", "nodename", "vm", "release", kernel, "sysname", "Linux"), Value: 1})
	if layout != "" {
		c.overrides = append(c.overrides, sample.Metric{Name: "memdoctor_cgroup_info", Labels: sample.L("memory", layout, "mode", layout), Value: 1})
	}
	f := findingOf(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, "dying-cgroups-6.18-x86_64-hybrid"), c), Source: "test"}), "dying_cgroups")
	if f == nil {
		t.Fatalf("dying_cgroups did not fire on %s %s", kernel, layout)
	}
	return f
}

// Remedies fit the kernel and the cgroup layout of the data they are
// printed for: memory.reclaim only from 5.19, v1 files on v1, both (each
// named) when the layout is unknown.
func TestDyingRemediesFitHost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		kernel, layout string
		want, never    []string
	}{
		{"5.0.0-1-amd64", "v2", nil, []string{"memory.reclaim", "memory.force_empty"}},
		{"5.15.0-91-generic", "v2", nil, []string{"memory.reclaim", "memory.force_empty"}},
		{"6.1.0-13-amd64", "v2", []string{"/sys/fs/cgroup/JOB/memory.reclaim", "memdoctor reclaim --apply"}, []string{"memory.force_empty", "5.19+"}},
		{"5.0.0-1-amd64", "v1", []string{"/sys/fs/cgroup/memory/JOB/memory.force_empty", "find /sys/fs/cgroup/memory "}, []string{"memory.reclaim"}},
		{"6.1.0-13-amd64", "", []string{"rmdir /sys/fs/cgroup/memory/JOB   # cgroup v1", "rmdir /sys/fs/cgroup/JOB   # cgroup v2, kernel 5.19+"}, nil},
		{"5.4.0-1-amd64", "", []string{"rmdir /sys/fs/cgroup/memory/JOB   # cgroup v1"}, []string{"memory.reclaim"}},
	} {
		got := commandsOf(dyingOn(t, c.kernel, c.layout))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %q: remedies lack %q:\n%s", c.kernel, c.layout, w, got)
			}
		}
		for _, n := range c.never {
			if strings.Contains(got, n) {
				t.Errorf("%s %q: remedies offer %q:\n%s", c.kernel, c.layout, n, got)
			}
		}
	}
}

// Code to put in a program is not a shell command: GC.start is Ruby.
func TestCodeIsNotACommand(t *testing.T) {
	t.Parallel()
	c := parseCase(t, "testdata/gc_heap_slack/fire_ruby_oldmalloc.prom")
	f := findingOf(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, c.base), c), Source: "test"}), "gc_heap_slack")
	if f == nil {
		t.Fatal("gc_heap_slack did not fire")
	}
	code := false
	for _, r := range f.Remedies {
		for _, cmd := range r.Commands {
			if strings.Contains(cmd, "GC.start") {
				t.Errorf("Ruby code as a shell command: %q", cmd)
			}
		}
		for _, l := range r.Code {
			code = code || strings.HasPrefix(l, "GC.start") && r.Language == "ruby"
		}
	}
	if !code {
		t.Errorf("GC.start is not given as Ruby code: %+v", f.Remedies)
	}
}

// A missing runtime's fix fits where the data comes from: a live check
// scrapes with check --scrape, a recording with record --scrape, a
// Prometheus source through a recorder it scrapes.
func TestScrapeAdviceFitsContext(t *testing.T) {
	t.Parallel()
	fixes := func(r *model.Report) string {
		var b strings.Builder
		for _, n := range r.Notes {
			if strings.Contains(n.Source, "gc_time_high") {
				b.WriteString(n.Fix)
			}
		}
		return b.String()
	}
	snap := fixes(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, "healthy-6.18-x86_64-hybrid"), ruleCase{}), Source: "live"}))
	if !strings.Contains(snap, "memdoctor check --scrape URL") {
		t.Errorf("check's fix: %q", snap)
	}
	w := seriestest.MustParse(t, "interval 15m\nnode_memory_MemTotal_bytes 16e9+0x100\nnode_memory_MemAvailable_bytes 8e9+0x100\n")
	rec := fixes(diagnose.Run(diagnose.Data{Latest: model.LatestSnapshot(w, 0), Window: w, Source: "store"}))
	if !strings.Contains(rec, "memdoctor record --scrape URL") || strings.Contains(rec, "check --scrape") {
		t.Errorf("a recording's fix: %q", rec)
	}
	prom := fixes(diagnose.Run(diagnose.Data{Window: w, Source: "prometheus"}))
	if !strings.Contains(prom, "record --scrape URL") || !strings.Contains(prom, "Prometheus") || strings.Contains(prom, "check --scrape") {
		t.Errorf("a Prometheus source's fix: %q", prom)
	}
	// The allocator's view: a live check may pause a process to read it,
	// a recording cannot.
	alloc := func(r *model.Report) string {
		for _, n := range r.Notes {
			if strings.Contains(n.Source, "allocator_hoarding") {
				return n.Fix
			}
		}
		return ""
	}
	if live := alloc(diagnose.Run(diagnose.Data{Latest: apply(baseSnapshot(t, "healthy-6.18-x86_64-hybrid"), ruleCase{}), Source: "live"})); !strings.Contains(live, "check --malloc") {
		t.Errorf("check's allocator fix: %q", live)
	}
	recAlloc := alloc(diagnose.Run(diagnose.Data{Latest: model.LatestSnapshot(w, 0), Window: w, Source: "store"}))
	if recAlloc == "" || strings.Contains(recAlloc, "check --malloc") || !strings.Contains(recAlloc, "memdoctor record") {
		t.Errorf("a recording's allocator fix: %q", recAlloc)
	}
}

// Follow-up commands name the data they are about instead of a literal SRC.
func TestFollowUpCommandsNameTheSource(t *testing.T) {
	t.Parallel()
	c := parseSeriesCase(t, "testdata/watermark_thrash/fire_bursts.series")
	run := func() *model.Report {
		return diagnose.Run(diagnose.Data{Window: seriestest.MustParse(t, c.src), Source: "store"})
	}
	r := run()
	if f := findingOf(r, "watermark_thrash"); f == nil || !strings.Contains(commandsOf(f), "--from SRC") {
		t.Fatal("the case no longer has a follow-up command to fill in")
	}
	r.FitSource("/var/lib/memdoctor/host 1.db", "")
	got := commandsOf(findingOf(r, "watermark_thrash"))
	if strings.Contains(got, "SRC") || !strings.Contains(got, "memdoctor diagnose --from '/var/lib/memdoctor/host 1.db' --since -7d") {
		t.Errorf("recording:\n%s", got)
	}
	r = run()
	r.FitSource("fleet.om", "db7:9100")
	if got := commandsOf(findingOf(r, "watermark_thrash")); !strings.Contains(got, "--from fleet.om --instance db7:9100 --since -7d") {
		t.Errorf("one instance of several:\n%s", got)
	}
	r = run()
	r.FitPrometheus("http://prom:9090", "db7:9100")
	if got := commandsOf(findingOf(r, "watermark_thrash")); strings.Contains(got, "SRC") || strings.Contains(got, "--since") ||
		!strings.Contains(got, `--prometheus http://prom:9090 --match '{instance="db7:9100"}' --range 7d`) {
		t.Errorf("Prometheus:\n%s", got)
	}
}
