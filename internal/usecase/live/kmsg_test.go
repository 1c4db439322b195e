package live_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// The kernel lab's log of a process killed at a 64M cgroup limit (6.1),
// read as the kernel log beside a capture whose vmstat counts kills:
// oom_kills names the victim, its RSS and anon RSS, the cgroup and its
// limit, and when. Without a log path the finding has none of it.
func TestOOMKillsKernelLogLab61(t *testing.T) {
	pfs := capture61(t)
	want := procfs.ParseOOMReports(mustRead(t, "../../procfs/testdata/kmsg-oom-memcg-6.1.txt"))
	if len(want) != 1 {
		t.Fatalf("the lab log has %d reports", len(want))
	}
	w := want[0]
	for _, path := range []string{"../../procfs/testdata/kmsg-oom-memcg-6.1.txt", ""} {
		res, err := collect.Collect(pfs, collect.Options{KmsgPath: path})
		if err != nil {
			t.Fatal(err)
		}
		s := &res.Snapshot
		// The capture's host had no kill: count one, as the lab's did.
		for i, m := range s.Metrics {
			if m.Name == "node_vmstat_oom_kill" {
				s.Metrics[i].Value = 1
			}
		}
		found := diagnose.Run(diagnose.Data{Latest: s, Source: "test"}).Findings
		var f *model.Finding
		for i := range found {
			if found[i].ID == "oom_kills" {
				f = &found[i]
			}
		}
		if f == nil {
			t.Fatalf("oom_kills did not fire: %+v", found)
		}
		evs := map[string]model.Evidence{}
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

// killedOnce is a capture's files with /proc/vmstat counting one OOM kill
// since boot: the kernel log is read only then (a host that counted none
// has no report in it).
type killedOnce struct{ fs.FS }

var oomKillLine = regexp.MustCompile(`(?m)^oom_kill \d+$`)

func (k killedOnce) Open(name string) (fs.File, error) {
	if name != "proc/vmstat" {
		return k.FS.Open(name)
	}
	b, err := fs.ReadFile(k.FS, name)
	if err != nil {
		return nil, err
	}
	return fstest.MapFS{name: {Data: oomKillLine.ReplaceAll(b, []byte("oom_kill 1"))}}.Open(name)
}

// capture61 is the 6.1 capture, its vmstat counting one OOM kill.
func capture61(t *testing.T) procfs.FS {
	t.Helper()
	fsys, prov, err := capture.LoadFile("../../../testdata/captures/healthy-6.1-x86_64-v2.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := fs.ReadFile(fsys, "proc/vmstat"); err != nil || !oomKillLine.Match(b) {
		t.Fatalf("the capture's vmstat has no oom_kill line (%v)", err)
	}
	return procfs.NewFSFrom(killedOnce{fsys}, prov.PageSize)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An unreadable kernel log (absent here; not permitted alike) gives no
// series and a note that says what it hides.
func TestKernelLogUnreadableIsANote(t *testing.T) {
	res, err := collect.Collect(capture61(t), collect.Options{KmsgPath: filepath.Join(t.TempDir(), "kmsg")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot.Has("memdoctor_kmsg_oom_kill_seconds") {
		t.Error("series from no log")
	}
	var note string
	for _, n := range res.Notes {
		if n.Source == "dev/kmsg" {
			note = n.Message + " / " + n.Hides
		}
	}
	if !strings.Contains(note, "not readable") || !strings.Contains(note, "OOM killer") {
		t.Errorf("note %q in %+v", note, res.Notes)
	}
}

// A hostile log: a comm with a terminal escape and an overlong field; the
// victim comes out with the escape replaced, the overlong cgroup dropped.
func TestKernelLogHostileComm(t *testing.T) {
	log := filepath.Join(t.TempDir(), "kmsg")
	text := "6,1,5000000,-;oom-kill:constraint=CONSTRAINT_NONE,oom_memcg=/" + strings.Repeat("x", 300) +
		",task=ev\x1b[31mil,pid=77,uid=0\n6,2,5000001,-;Out of memory: Killed process 77 (ev\x1b[31mil) total-vm:10kB, anon-rss:8kB, file-rss:0kB, shmem-rss:0kB\n"
	if err := os.WriteFile(log, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := collect.Collect(capture61(t), collect.Options{KmsgPath: log})
	if err != nil {
		t.Fatal(err)
	}
	ms := res.Snapshot.Select("memdoctor_kmsg_oom_kill_seconds")
	if len(ms) != 1 || ms[0].Labels.Get("task") != "ev?[31mil" || ms[0].Labels.Get("oom_memcg") != "" {
		t.Errorf("series %+v", ms)
	}
}
