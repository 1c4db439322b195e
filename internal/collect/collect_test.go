package collect_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// copyTree copies the real host capture of procfs' tests into a temp dir
// that a test may then damage.
func copyTree(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "procfs", "testdata", "host")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func collectDir(t *testing.T, dir string) (*collect.Result, error) {
	t.Helper()
	return collect.Collect(procfs.NewFSFrom(os.DirFS(dir), 4096), collect.Options{TopProcesses: 5, TopCgroups: 5, ArenaScan: true})
}

func TestCollectRealCapture(t *testing.T) {
	t.Parallel()
	res, err := collectDir(t, copyTree(t))
	if err != nil {
		t.Fatal(err)
	}
	s := &res.Snapshot
	for _, name := range []string{"node_memory_MemTotal_bytes", "node_vmstat_pgfault", "node_zoneinfo_min_pages",
		"node_slabinfo_objects", "node_cgroups_cgroups", "node_cpu_seconds_total", "node_sysctl_vm_min_free_kbytes",
		"node_pressure_memory_waiting_seconds_total", "node_uname_info", "memdoctor_process_pss_bytes"} {
		if !s.Has(name) {
			t.Errorf("series %s missing", name)
		}
	}
	if got, want := s.Value("node_memory_MemTotal_bytes"), float64(24684092*1024); got != want {
		t.Errorf("MemTotal = %v, want %v", got, want)
	}
	if got := s.Value("node_zoneinfo_managed_pages", "zone", "DMA"); got != 3840 {
		t.Errorf("DMA managed = %v, want 3840", got)
	}
	if v, ok := s.Get("node_sysctl_vm_lowmem_reserve_ratio", "index", "2"); !ok || v != 32 {
		t.Errorf("lowmem_reserve_ratio[2] = %v, %v; want 32", v, ok)
	}
}

func TestProcessVanishedMidRead(t *testing.T) {
	t.Parallel()
	dir := copyTree(t)
	// The process' status was read, then it exited before smaps_rollup.
	if err := os.Remove(filepath.Join(dir, "proc", "7130", "smaps_rollup")); err != nil {
		t.Fatal(err)
	}
	res, err := collectDir(t, dir)
	if err != nil {
		t.Fatalf("a vanished process must not fail the collection: %v", err)
	}
	if got := res.Snapshot.Value("memdoctor_processes_vanished"); got != 1 {
		t.Errorf("vanished = %v, want 1", got)
	}
	if ms := res.Snapshot.Select("memdoctor_process_rss_bytes", "pid", "7130"); len(ms) != 0 {
		t.Errorf("the vanished process is still reported: %+v", ms)
	}
}

func TestMalformedInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file, content string
		required      bool
		want          string
	}{
		{"proc/meminfo", "MemTotal:       24684092 kB\nMemFree\n", true, "proc/meminfo: line 2"},
		{"proc/zoneinfo", "Node 0, zone      DMA\n  pages free     3840\n        min      nonsense\n", false, "proc/zoneinfo: line 3"},
		{"proc/slabinfo", "slabinfo - version: 9.0\n", false, "proc/slabinfo"},
		{"proc/stat", "cpu  1 2 x\n", false, "proc/stat: line 1"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.file, "/", "_"), func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t)
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := collectDir(t, dir)
			if c.required {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one naming %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("an optional source must not fail the collection: %v", err)
			}
			found := false
			for _, n := range res.Notes {
				found = found || strings.Contains(n.Message, c.want)
			}
			if !found {
				t.Errorf("no note names %q: %+v", c.want, res.Notes)
			}
		})
	}
}

// TestCaptureRoundTrip records a live collection, writes the archive, loads
// it and collects again: every value must be identical.
func TestCaptureRoundTrip(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	t.Parallel()
	live := procfs.NewFS("/")
	rec := capture.NewRecorder(live.Sys(), capture.RecordOptions{})
	now := time.Now()
	opt := collect.Options{TopProcesses: 10, TopCgroups: 10, ArenaScan: true, Now: func() time.Time { return now }}
	a, err := collect.Collect(procfs.NewFSFrom(rec, live.PageSize), opt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	prov := capture.Provenance{PageSize: live.PageSize}
	if g := a.Snapshot.Select("memdoctor_glibc_info"); len(g) > 0 {
		prov.Glibc = g[0].Labels.Get("banner") // the libc binary is not archived
	}
	if err := capture.Write(&buf, prov, rec.Contents(), capture.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	fsys, prov, err := capture.Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	replay := procfs.NewFSFrom(fsys, prov.PageSize)
	replay.GlibcBanner = prov.Glibc
	b, err := collect.Collect(replay, opt)
	if err != nil {
		t.Fatal(err)
	}
	strip := func(s sample.Snapshot) map[string]float64 {
		m := map[string]float64{}
		for _, x := range s.Metrics {
			switch {
			case x.Name == "memdoctor_collector_duration_seconds", x.Name == "memdoctor_smaps_rollup_seconds":
				continue
			case strings.HasPrefix(x.Name, "memdoctor_malloc_"), x.Name == "memdoctor_process_malloc_arena_max":
				// From a preload library's stats file, or the arena cap,
				// found through the process' environment, which a capture
				// never holds
				// (docs/capture-format.md): live only.
				continue
			}
			m[x.Key()] = x.Value
		}
		return m
	}
	if d := cmp.Diff(strip(a.Snapshot), strip(b.Snapshot)); d != "" {
		t.Errorf("replayed capture differs from the live collection (-live +replay):\n%s", d)
	}
}

// One malformed mountinfo line (an empty mount point, seen on real
// kernels) must not drop the cgroup view: the same cgroup series as from the
// clean file, and a note naming the skipped line.
func TestMountinfoBadLineKeepsCgroups(t *testing.T) {
	t.Parallel()
	clean, err := collectDir(t, copyTree(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := copyTree(t)
	p := filepath.Join(dir, "proc", "self", "mountinfo")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append([]byte("36 35 98:0 /  rw,noatime - ext4 /dev/root rw\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := collectDir(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range clean.Snapshot.Metrics {
		if !strings.HasPrefix(m.Name, "memdoctor_cgroup") && !strings.HasPrefix(m.Name, "node_cgroups") {
			continue
		}
		n++
		if v, ok := res.Snapshot.Get(m.Name, labelPairs(m.Labels)...); !ok || v != m.Value {
			t.Errorf("%s%v: %v, %v with the bad line; %v without", m.Name, m.Labels, v, ok, m.Value)
		}
	}
	if n == 0 {
		t.Fatal("the clean capture has no cgroup series: the test tests nothing")
	}
	found := false
	for _, note := range res.Notes {
		found = found || note.Source == "proc/self/mountinfo" && strings.Contains(note.Message, "1 malformed line(s) skipped") && strings.Contains(note.Message, "line 1")
	}
	if !found {
		t.Errorf("no note about the skipped line: %+v", res.Notes)
	}
}

func labelPairs(ls sample.Labels) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name, l.Value)
	}
	return out
}

// The processes' collector runs beside the others (Collect): what it adds
// is merged at its place in the order, between the metrics of the
// collectors registered before it and those after, and every collection
// of the same files is the same snapshot.
func TestConcurrentCollectorMergedInPlace(t *testing.T) {
	t.Parallel()
	dir := copyTree(t)
	first, err := collectDir(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Each collector's metrics end with its duration and success.
	owner := make([]string, len(first.Snapshot.Metrics))
	var order []string
	start := 0
	for i, m := range first.Snapshot.Metrics {
		if m.Name != "memdoctor_collector_success" {
			continue
		}
		col := m.Labels.Get("collector")
		order = append(order, col)
		for j := start; j <= i; j++ {
			owner[j] = col
		}
		start = i + 1
	}
	var timings []string
	for _, tm := range first.Timings {
		timings = append(timings, tm.Collector)
	}
	if strings.Join(order, ",") != strings.Join(timings, ",") {
		t.Fatalf("collectors' metrics in the order %v, their timings %v", order, timings)
	}
	procs := 0
	for i, m := range first.Snapshot.Metrics {
		if strings.HasPrefix(m.Name, "memdoctor_process_") {
			procs++
			if owner[i] != "processes" {
				t.Errorf("metric %d, %s%s, is among the %s collector's", i, m.Name, m.Labels, owner[i])
			}
		}
	}
	if procs == 0 {
		t.Fatal("the capture gave no process metric")
	}
	for range 5 {
		again, err := collectDir(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		strip := func(r *collect.Result) []sample.Metric {
			var out []sample.Metric
			for _, m := range r.Snapshot.Metrics {
				if m.Name != "memdoctor_collector_duration_seconds" && m.Name != "memdoctor_smaps_rollup_seconds" {
					out = append(out, m)
				}
			}
			return out
		}
		if d := cmp.Diff(strip(first), strip(again)); d != "" {
			t.Fatalf("two collections of the same files differ (-first +again):\n%s", d)
		}
		if d := cmp.Diff(first.Notes, again.Notes); d != "" {
			t.Fatalf("two collections' notes differ:\n%s", d)
		}
	}
}
