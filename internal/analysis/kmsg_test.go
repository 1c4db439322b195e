package analysis_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// The kernel lab's log of a process killed at a 64M cgroup limit (6.1),
// read as the kernel log beside a capture whose vmstat counts kills:
// oom_kills names the victim, its RSS and anon RSS, the cgroup and its
// limit, and when. Without a log path the finding has none of it.
func TestOOMKillsKernelLogLab61(t *testing.T) {
	fsys, prov, err := capture.LoadFile("../../testdata/captures/healthy-6.1-x86_64-v2.txtar")
	if err != nil {
		t.Fatal(err)
	}
	pfs := procfs.NewFSFrom(fsys, prov.PageSize)
	want := procfs.ParseOOMReports(mustRead(t, "../procfs/testdata/kmsg-oom-memcg-6.1.txt"))
	if len(want) != 1 {
		t.Fatalf("the lab log has %d reports", len(want))
	}
	w := want[0]
	for _, path := range []string{"../procfs/testdata/kmsg-oom-memcg-6.1.txt", ""} {
		res, err := collect.Collect(pfs, collect.Options{KmsgPath: path})
		if err != nil {
			t.Fatal(err)
		}
		s := &res.Scrape
		// The capture's host had no kill: count one, as the lab's did.
		for i, m := range s.Metrics {
			if m.Name == "node_vmstat_oom_kill" {
				s.Metrics[i].Value = 1
			}
		}
		h := diagnose.Analyze(s, "test")
		found, _ := diagnose.Run(&diagnose.Input{Host: h}, diagnose.Rules())
		var f *diagnose.Finding
		for i := range found {
			if found[i].ID == "oom_kills" {
				f = &found[i]
			}
		}
		if f == nil {
			t.Fatalf("oom_kills did not fire: %+v", found)
		}
		evs := map[string]diagnose.Evidence{}
		for _, e := range f.Evidence {
			evs[e.Name] = e
		}
		if path == "" {
			if _, ok := evs["kmsg_kill_1_victim"]; ok || strings.Contains(f.Summary, "kernel log's latest") {
				t.Errorf("no log read, yet the finding names a victim: %+v", f)
			}
			continue
		}
		victim := w.Task + " (pid " + itoa(w.PID) + ")"
		if evs["kmsg_kill_1_victim"].Text != victim || evs["kmsg_kill_1_cgroup"].Text != w.MemCG ||
			evs["kmsg_kill_1_cgroup_limit_bytes"].Value != float64(w.LimitKB*1024) ||
			evs["kmsg_kill_1_rss_bytes"].Value != float64(w.RSSKB()*1024) ||
			evs["kmsg_kill_1_anon_rss_bytes"].Value != float64(w.AnonRSSKB*1024) ||
			evs["kmsg_kill_1_seconds_after_boot"].Value != float64(w.TimeUsec)/1e6 || evs["kmsg_kill_1_at"].Text == "" {
			t.Errorf("evidence %+v, want the lab's report %+v", f.Evidence, w)
		}
		if !strings.Contains(f.Summary, victim) || !strings.Contains(f.Summary, "cgroup "+w.MemCG+" at its limit 64") {
			t.Errorf("summary %q", f.Summary)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
