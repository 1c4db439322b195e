package source

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/incidenttest"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The kernel text of the healthy capture, by cron kind.
func captureText(t *testing.T) map[string]string {
	t.Helper()
	fsys, _, err := capture.LoadFile(filepath.Join(captures, "healthy-6.18-x86_64-hybrid.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range []string{"meminfo", "slabinfo", "cgroups", "vmstat", "zoneinfo", "stat", "pressure/memory"} {
		b, err := fs.ReadFile(fsys, "proc/"+k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = string(b)
	}
	return out
}

// This machine's own /proc files, copied every second for 5 seconds the way
// incident 1's cron job did, ingest as 5 snapshots with their values.
func TestCronLiveProc(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	type snap struct {
		at      time.Time
		meminfo []byte
		cgroups []byte
	}
	var snaps []snap
	slab := true
	for i := range 5 {
		if i > 0 {
			time.Sleep(time.Until(snaps[len(snaps)-1].at.Add(time.Second)))
		}
		now := time.Now().UTC().Truncate(time.Second)
		stamp := now.Format("2006-01-02.15:04:05")
		s := snap{at: now}
		for _, k := range []string{"meminfo", "slabinfo", "cgroups"} {
			b, err := os.ReadFile("/proc/" + k)
			if err != nil {
				if k == "slabinfo" && errors.Is(err, fs.ErrPermission) {
					slab = false
					continue
				}
				t.Fatal(err)
			}
			name := k + "_" + stamp
			if i < 2 { // the oldest ones compressed, as logrotate leaves them
				b, name = gz(t, b), name+".gz"
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
			switch k {
			case "meminfo":
				s.meminfo = b
			case "cgroups":
				s.cgroups = b
			}
			if i < 2 {
				switch k {
				case "meminfo":
					s.meminfo, _ = readMaybeGz(filepath.Join(dir, name), true)
				case "cgroups":
					s.cgroups, _ = readMaybeGz(filepath.Join(dir, name), true)
				}
			}
		}
		snaps = append(snaps, s)
	}
	if k, err := Detect(dir); err != nil || k != KindCron {
		t.Fatalf("Detect = %v, %v", k, err)
	}
	ms := newMemSink(t)
	st, err := Read(dir, IngestOptions{Instance: "this-host"}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	got := ms.snapshots["this-host"]
	if len(got) != 5 || st.Snapshots != 5 {
		t.Fatalf("%d scrapes (stats %d), want 5", len(got), st.Snapshots)
	}
	for i, s := range got {
		if !s.Time.Equal(snaps[i].at) {
			t.Errorf("scrape %d at %s, want %s", i, s.Time, snaps[i].at)
		}
		mi, err := procfs.ParseMeminfo(snaps[i].meminfo)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"MemTotal", "MemFree", "MemAvailable", "SUnreclaim"} {
			if got, want := s.Value("node_memory_"+k+"_bytes"), float64(mi.Value(k)); got != want {
				t.Errorf("scrape %d: %s = %v, want %v (the file's)", i, k, got, want)
			}
		}
		cgs, err := procfs.ParseCgroups(snaps[i].cgroups)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cgs {
			if got, want := s.Value("node_cgroups_cgroups", "subsys_name", c.Name), float64(c.NumCgroups); got != want {
				t.Errorf("scrape %d: %s cgroups = %v, want %v", i, c.Name, got, want)
			}
		}
		if slab && len(s.Select("node_slabinfo_objects")) < 50 {
			t.Errorf("scrape %d: %d slab caches", i, len(s.Select("node_slabinfo_objects")))
		}
		if s.Has("memdoctor_collector_duration_seconds") {
			t.Errorf("scrape %d keeps the collectors' parse durations", i)
		}
	}
	for _, n := range st.Notes {
		if !strings.HasSuffix(n.Message, "(in 5 of 5 snapshots)") {
			t.Errorf("note not aggregated: %+v", n)
		}
	}
}

func TestCronLayout(t *testing.T) {
	t.Parallel()
	txt := captureText(t)
	dir := filepath.Join(t.TempDir(), "game-17")
	// Day 1 flat; day 2 in a per-day directory, compressed; odd files around.
	for _, stamp := range []string{"2020-01-31.10:05", "2020-01-31.10:10"} {
		writeFile(t, dir, "meminfo_"+stamp, txt["meminfo"])
		writeFile(t, dir, "slabinfo_"+stamp, txt["slabinfo"])
		writeFile(t, dir, "cgroups_"+stamp, txt["cgroups"])
		writeFile(t, dir, "pressure_"+stamp, txt["pressure/memory"])
		writeFile(t, dir, "version_"+stamp, "Linux version 5.0.0-1-amd64 (debian-kernel@lists.debian.org) (gcc version 8.3.0) #1 SMP Debian 5.0.2-1 (2019-03-19)\n")
	}
	writeFile(t, dir, "2020-02-01/meminfo_2020-02-01.00:00.gz", string(gz(t, []byte(txt["meminfo"]))))
	writeFile(t, dir, "2020-02-01/vmstat_2020-02-01.00:00.gz", string(gz(t, []byte(txt["vmstat"]))))
	writeFile(t, dir, "2020-02-01/zoneinfo_2020-02-01.00:00", txt["zoneinfo"])
	writeFile(t, dir, "2020-02-01/stat_2020-02-01.00:00", txt["stat"])
	writeFile(t, dir, "2020-02-01/pressure_memory_2020-02-01.00:00", txt["pressure/memory"])
	writeFile(t, dir, "2020-02-01/slabinfo_2020-02-01.00:05", txt["slabinfo"]) // no meminfo at 00:05
	writeFile(t, dir, "meminfo_2020-01-31.10:05.gz", string(gz(t, []byte(txt["meminfo"]))))
	writeFile(t, dir, "README", "saved by cron\n")
	writeFile(t, dir, "collect.sh", "#!/bin/sh\n")
	writeFile(t, dir, ".swp", "x")

	ms := newMemSink(t)
	st, err := Read(dir, IngestOptions{Workers: 3}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	got := ms.snapshots["game-17"]
	if len(got) != 3 {
		t.Fatalf("%d scrapes, want 3 (instances %v)", len(got), st.Instances)
	}
	want := []time.Time{
		time.Date(2020, 1, 31, 10, 5, 0, 0, time.UTC),
		time.Date(2020, 1, 31, 10, 10, 0, 0, time.UTC),
		time.Date(2020, 2, 1, 0, 0, 0, 0, time.UTC),
	}
	for i, s := range got {
		if !s.Time.Equal(want[i]) {
			t.Errorf("scrape %d at %s, want %s", i, s.Time, want[i])
		}
		if v := s.Value("node_memory_MemTotal_bytes"); v != 24684092*1024 {
			t.Errorf("scrape %d: MemTotal %v", i, v)
		}
	}
	if u := got[0].Select("node_uname_info"); len(u) != 1 || u[0].Labels.Get("release") != "5.0.0-1-amd64" {
		t.Errorf("uname from the version file: %v", u)
	}
	if !got[0].Has("node_pressure_memory_waiting_seconds_total") || !got[2].Has("node_pressure_memory_waiting_seconds_total") {
		t.Error("pressure files (both names) not read")
	}
	if !got[2].Has("node_vmstat_pgfault") || !got[2].Has("node_zoneinfo_managed_pages") || !got[2].Has("node_cpu_seconds_total") {
		t.Error("vmstat, zoneinfo or stat of the third snapshot not read")
	}
	if got[2].Has("node_slabinfo_objects") || !got[1].Has("node_slabinfo_objects") {
		t.Error("slabinfo in the wrong snapshot")
	}
	if st.Skipped != 1 {
		t.Errorf("skipped %d, want 1 (00:05 has no meminfo)", st.Skipped)
	}
	notes := map[string]string{}
	for _, n := range st.Notes {
		notes[n.Source+": "+n.Message] = n.Message
	}
	for _, w := range []string{
		"2 files not recognised, ignored: README, collect.sh",
		"1 files duplicate another of the same kind and time, ignored: " + filepath.Join(dir, "meminfo_2020-01-31.10:05.gz"),
		"1 of 4 timestamps have no meminfo file and were skipped: 2020-02-01.00:05:00",
		"vmstat: no vmstat file (vmstat_YYYY-MM-DD.HH:MM) (in 2 of 3 snapshots)",
		"slabinfo: no slabinfo file",
	} {
		found := false
		for k := range notes {
			if strings.Contains(k, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no note %q in:\n%s", w, strings.Join(keys(notes), "\n"))
		}
	}
	seen := map[string]bool{}
	for _, n := range st.Notes {
		if seen[n.Source+n.Message] {
			t.Errorf("note repeated: %+v", n)
		}
		seen[n.Source+n.Message] = true
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Names in a local time zone; the kernel release given by an option.
func TestCronLocation(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone data")
	}
	dir := t.TempDir()
	writeFile(t, dir, "meminfo_2020-07-01.12:00", captureText(t)["meminfo"])
	ms := newMemSink(t)
	if _, err := Read(dir, IngestOptions{Instance: "h", Location: paris, Kernel: "5.0.0-1-amd64"}, ms.sink); err != nil {
		t.Fatal(err)
	}
	if got, want := ms.snapshots["h"][0].Time, time.Date(2020, 7, 1, 10, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("time %s, want %s", got, want)
	}
	if u := ms.snapshots["h"][0].Select("node_uname_info"); len(u) != 1 || u[0].Labels.Get("release") != "5.0.0-1-amd64" {
		t.Errorf("uname %v, want the release given by the Kernel option", u)
	}
}

func TestCronMalformed(t *testing.T) {
	t.Parallel()
	txt := captureText(t)
	cut := func(s string, n int) string { return s[:n] }
	for _, tc := range []struct {
		name  string
		files map[string]string
		bad   string // file named in the error
		line  int
		want  string
	}{
		{"bad timestamp in a name", map[string]string{"meminfo_2020-13-01.10:05": txt["meminfo"]},
			"meminfo_2020-13-01.10:05", 0, "bad timestamp in cron file name"},
		{"impossible time", map[string]string{"slabinfo_2020-01-01.25:00": txt["slabinfo"], "meminfo_2020-01-01.10:00": txt["meminfo"]},
			"slabinfo_2020-01-01.25:00", 0, "bad timestamp in cron file name"},
		{"meminfo cut short", map[string]string{"meminfo_2020-01-01.10:00": txt["meminfo"], "meminfo_2020-01-01.10:05": cut(txt["meminfo"], 150)},
			"meminfo_2020-01-01.10:05", 6, "malformed"},
		{"slabinfo cut short", map[string]string{"meminfo_2020-01-01.10:00": txt["meminfo"], "slabinfo_2020-01-01.10:00": cut(txt["slabinfo"], 3000)},
			"slabinfo_2020-01-01.10:00", 0, "malformed"},
		{"garbage meminfo", map[string]string{"meminfo_2020-01-01.10:00": "\x7fELF\x02\x01\x01garbage\n"},
			"meminfo_2020-01-01.10:00", 1, "malformed"},
		{"broken gzip", map[string]string{"meminfo_2020-01-01.10:00.gz": string(gz(t, []byte(txt["meminfo"])))[:100]},
			"meminfo_2020-01-01.10:00.gz", 0, "cut short or damaged"},
		{"negative MemTotal", map[string]string{"meminfo_2020-01-01.10:00": txt["meminfo"], "meminfo_2020-01-01.10:05": "MemTotal:             -5 kB\n"},
			"meminfo_2020-01-01.10:05", 1, "MemTotal is -5 kB"},
		{"MemAvailable above MemTotal", map[string]string{"meminfo_2020-01-01.10:00": txt["meminfo"],
			"meminfo_2020-01-01.10:05": "MemTotal:        8388608 kB\nMemFree:          1024 kB\nMemAvailable:   16777216 kB\n"},
			"meminfo_2020-01-01.10:05", 3, "MemAvailable 16777216 kB is above MemTotal 8388608 kB"},
		{"meminfo without MemTotal", map[string]string{"meminfo_2020-01-01.10:00": txt["meminfo"], "meminfo_2020-01-01.10:05": "MemFree:          1024 kB\n"},
			"meminfo_2020-01-01.10:05", 0, "no MemTotal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for n, d := range tc.files {
				writeFile(t, dir, n, d)
			}
			_, err := Read(dir, IngestOptions{}, newMemSink(t).sink)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v, want an InputError", err)
			}
			if ie.File != filepath.Join(dir, tc.bad) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to name %s and say %q", err, tc.bad, tc.want)
			}
			if tc.line > 0 && ie.Line != tc.line {
				t.Errorf("error %q: line %d, want %d", err, ie.Line, tc.line)
			}
			if tc.name == "slabinfo cut short" && ie.Line == 0 {
				t.Errorf("error %q names no line", err)
			}
			// Lenient: the bad file or snapshot is skipped and said.
			ms := newMemSink(t)
			st, err := Read(dir, IngestOptions{Lenient: true}, ms.sink)
			if len(tc.files) == 1 {
				if err == nil {
					t.Error("lenient: nothing readable, yet no error")
				}
				return
			}
			if err != nil {
				t.Fatalf("lenient: %v", err)
			}
			if st.Skipped != 1 || st.Snapshots != 1 {
				t.Errorf("lenient: skipped %d, scrapes %d; want 1 and 1", st.Skipped, st.Snapshots)
			}
			said := false
			for _, n := range st.Notes {
				said = said || strings.Contains(n.Message, tc.bad)
			}
			if !said {
				t.Errorf("lenient: no note names %s: %v", tc.bad, st.Notes)
			}
		})
	}
}

func TestCronProgress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := incidenttest.WriteIncident1CronDir(dir, incidenttest.Incident1Options{Days: 2, Interval: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls [][2]int64
	start := time.Now()
	_, err := Read(dir, IngestOptions{Progress: func(done, total int64) {
		mu.Lock()
		calls = append(calls, [2]int64{done, total})
		mu.Unlock()
	}}, newMemSink(t).sink)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if len(calls) < 2 || calls[0] != [2]int64{0, 288} || calls[len(calls)-1] != [2]int64{288, 288} {
		t.Fatalf("progress calls %v, want 0/288 first and 288/288 last", calls)
	}
	if limit := int(elapsed.Seconds()*10) + 3; len(calls) > limit {
		t.Errorf("%d progress calls in %s, want at most %d", len(calls), elapsed, limit)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] {
			t.Errorf("progress went back: %v", calls)
		}
	}
}

func TestParseCronName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, kind string
		t          time.Time
		gz, ok     bool
		err        bool
	}{
		{"meminfo_2020-01-31.10:05", "meminfo", time.Date(2020, 1, 31, 10, 5, 0, 0, time.UTC), false, true, false},
		{"slabinfo_2020-01-31.10:05:07.gz", "slabinfo", time.Date(2020, 1, 31, 10, 5, 7, 0, time.UTC), true, true, false},
		{"pressure_memory_2020-01-31.10:05", "pressure_memory", time.Date(2020, 1, 31, 10, 5, 0, 0, time.UTC), false, true, false},
		{"pressure_2020-01-31.10:05", "pressure", time.Date(2020, 1, 31, 10, 5, 0, 0, time.UTC), false, true, false},
		{"stat_2020-01-31.10:05", "stat", time.Date(2020, 1, 31, 10, 5, 0, 0, time.UTC), false, true, false},
		{"vmstat_2020-01-31.10:05", "vmstat", time.Date(2020, 1, 31, 10, 5, 0, 0, time.UTC), false, true, false},
		{"meminfo_2020-02-30.10:05", "meminfo", time.Time{}, false, false, true},
		{"meminfo_2020-01-31.10:5", "meminfo", time.Time{}, false, false, true},
		{"meminfo_2020-01-31.10:05:", "meminfo", time.Time{}, false, false, true},
		{"meminfo_2020-01-31 10:05", "meminfo", time.Time{}, false, false, true},
		{"meminfo_latest", "", time.Time{}, false, false, false},
		{"meminfo", "", time.Time{}, false, false, false},
		{"README", "", time.Time{}, false, false, false},
		{"buddyinfo_2020-01-31.10:05", "buddyinfo", time.Date(2020, 1, 31, 10, 5, 0, 0, time.UTC), false, true, false},
	} {
		kind, at, gz, ok, err := ParseCronName(tc.name, nil)
		if ok != tc.ok || (err != nil) != tc.err || (ok && (kind != tc.kind || !at.Equal(tc.t) || gz != tc.gz)) {
			t.Errorf("ParseCronName(%q) = %q %s gz=%v ok=%v err=%v; want %q %s gz=%v ok=%v err=%v",
				tc.name, kind, at, gz, ok, err, tc.kind, tc.t, tc.gz, tc.ok, tc.err)
		}
		if err != nil && !errors.Is(err, ErrCronName) {
			t.Errorf("ParseCronName(%q): %v does not match ErrCronName", tc.name, err)
		}
	}
}
