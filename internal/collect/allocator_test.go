package collect_test

// The allocator's view from memdoctor's preload library, read from real
// processes running it: a stats path with %p (one file per process, named
// by the pid), a path shared by a process and its forked child (each reads
// its own lines), and a path the library refuses (a note naming the
// process, no numbers).

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// forker holds 30 MB of malloc'd bytes (1000 B each: glibc malloc, not
// pymalloc), forks a child that adds 90 MB more, and prints both pids.
const forker = `
import os, sys, time
keep = [bytes(1000) for _ in range(30000)]
r, w = os.pipe()
child = os.fork()
if child == 0:
    more = [bytes(1000) for _ in range(90000)]
    os.write(w, b"x")
    time.sleep(120)
    os._exit(0)
os.read(r, 1)
print(os.getpid(), child, flush=True)
time.sleep(120)
`

func startForker(t *testing.T, lib, stats string) (parent, child int) {
	t.Helper()
	cmd := exec.Command("python3", "-c", forker)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMDOCTOR_STATS="+stats, "MEMDOCTOR_STATS_INTERVAL=100ms")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("forker: %v", err)
	}
	f := strings.Fields(line)
	parent, _ = strconv.Atoi(f[0])
	child, _ = strconv.Atoi(f[1])
	return parent, child
}

func TestPreloadStatsOfRealProcesses(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		if _, err := exec.LookPath("gcc"); err != nil {
			t.Skip("no C compiler to build the preload library")
		}
	}
	lib, err := preload.Build(context.Background(), preload.BuildOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ownP, ownC := startForker(t, lib, filepath.Join(dir, "own.%p.jsonl"))
	shP, shC := startForker(t, lib, filepath.Join(dir, "shared.jsonl"))
	badP, badC := startForker(t, lib, filepath.Join(dir, "bad.%d.jsonl"))
	for _, p := range []int{ownP, ownC} {
		if _, err := os.Stat(filepath.Join(dir, "own."+strconv.Itoa(p)+".jsonl")); err != nil {
			t.Fatalf("the library did not write its own file for pid %d: %v", p, err)
		}
	}
	time.Sleep(500 * time.Millisecond) // summaries after the child's allocation

	// Every collection reads each process' own numbers: the shared file
	// interleaves the parent's and the child's lines.
	for round := 0; round < 6; round++ {
		res, err := collect.Collect(procfs.NewFS("/"), collect.Options{TopProcesses: 400, ArenaScan: true, Live: true})
		if err != nil {
			t.Fatal(err)
		}
		s := &res.Snapshot
		inUse := func(pid int) (float64, bool) {
			return s.Get("memdoctor_malloc_in_use_bytes", "pid", strconv.Itoa(pid))
		}
		for _, c := range []struct {
			name     string
			pid      int
			min, max float64
		}{
			{"%p parent", ownP, 25e6, 70e6}, {"%p child", ownC, 110e6, 200e6},
			{"shared parent", shP, 25e6, 70e6}, {"shared child", shC, 110e6, 200e6},
		} {
			v, ok := inUse(c.pid)
			if !ok {
				t.Fatalf("round %d: %s (pid %d): no memdoctor_malloc_in_use_bytes; notes %+v", round, c.name, c.pid, res.Notes)
			}
			if v < c.min || v > c.max {
				t.Errorf("round %d: %s (pid %d): in use %.0f, want %.0f..%.0f", round, c.name, c.pid, v, c.min, c.max)
			}
		}
		for _, p := range []int{badP, badC} {
			sp := strconv.Itoa(p)
			if _, ok := inUse(p); ok {
				t.Errorf("pid %d: numbers from a path the library refuses", p)
			}
			if v, ok := s.Get("memdoctor_process_preload", "pid", sp); !ok || v != 1 {
				t.Errorf("pid %d: memdoctor_process_preload %v %v, want 1", p, v, ok)
			}
			noted := false
			for _, n := range res.Notes {
				noted = noted || strings.Contains(n.Message, "(pid "+sp+") runs memdoctor's preload library with a MEMDOCTOR_STATS it refuses")
			}
			if !noted {
				t.Errorf("pid %d: no note on its refused stats path; notes %+v", p, res.Notes)
			}
		}
		if t.Failed() {
			return
		}
	}
}

// The newest numbers of a stats file, as the library writes it: the newest
// line with mallinfo2 of the process' own pid (a line without a pid counts
// as its own), the newest trim among those lines, a trim of "0.000" ms
// measured (0 s) and "arenas":null (malloc_info failed) no arena count.
// Lines of a forked child sharing the file, lines without mallinfo2, a
// line that is not JSON and a last line being written are skipped.
func TestPreloadStatsNewestLines(t *testing.T) {
	t.Parallel()
	const head = `"time":"2026-05-01T10:00:00.000Z",`
	for _, c := range []struct {
		name  string
		stats string
		want  map[string]float64 // series; absent: not emitted
	}{
		{
			name: "own lines among a child's",
			stats: `{"event":"start",` + head + `"pid":7130,"rss":1773568,"config":{"trimIntervalMs":30000,"trimFreedBytes":0,"statsIntervalMs":60000,"requestPollMs":1000}}
{"event":"trim",` + head + `"pid":7130,"trigger":"interval","elapsedMs":2.500,"rss":{"before":9000,"after":8000,"diff":1000},"mallinfo2":{"arena":5000,"ordblks":1,"smblks":0,"hblks":0,"hblkhd":0,"fsmblks":0,"uordblks":3000,"fordblks":2000,"keepcost":0},"arenas":3,"freedBytes":0,"statsMs":0.010}
{"event":"summary",` + head + `"pid":4242,"rss":99999999,"mallinfo2":{"arena":77777777,"ordblks":1,"smblks":0,"hblks":0,"hblkhd":0,"fsmblks":0,"uordblks":66666666,"fordblks":11111111,"keepcost":0},"arenas":9,"trims":0,"releasedBytes":0,"freedSinceTrim":0}
{"event":"trim",` + head + `"pid":7130,"trigger":"freed","elapsedMs":0.000,"rss":{"before":null,"after":null,"diff":null},"mallinfo2":{"arena":4096,"ordblks":1,"smblks":0,"hblks":0,"hblkhd":0,"fsmblks":0,"uordblks":3000,"fordblks":1096,"keepcost":0},"arenas":3,"freedBytes":0,"statsMs":0.010}
{"event":"trim",` + head + `"pid":7130,"trigger":"interval","elapsedMs":9.000,"rss":{"before":null,"after":null,"diff":null}}
{"event":"summary",` + head + `"pid":7130,"rss":8000,"mallinfo2":{"arena":1000,"ordblks":1,"smblks":0,"hblks":1,"hblkhd":24,"fsmblks":0,"uordblks":600,"fordblks":400,"keepcost":0},"arenas":null,"trims":2,"releasedBytes":1000,"freedSinceTrim":0}
not json
{"event":"summary",` + head + `"pid":7130,"mallinfo2":{"arena":`,
			want: map[string]float64{
				"memdoctor_malloc_system_bytes": 1024, "memdoctor_malloc_in_use_bytes": 624, "memdoctor_malloc_free_bytes": 400,
				"memdoctor_malloc_trim_seconds": 0,
			},
		},
		{
			name: "a line without a pid, a trim without elapsedMs",
			stats: `{"event":"trim",` + head + `"pid":7130,"trigger":"interval","elapsedMs":null,"mallinfo2":{"arena":2048,"ordblks":1,"smblks":0,"hblks":0,"hblkhd":0,"fsmblks":0,"uordblks":1536,"fordblks":512,"keepcost":0},"arenas":2}
{"event":"summary",` + head + `"rss":8000,"mallinfo2":{"arena":2048,"ordblks":1,"smblks":0,"hblks":0,"hblkhd":0,"fsmblks":0,"uordblks":1024,"fordblks":1024,"keepcost":0},"arenas":4,"trims":0,"releasedBytes":0,"freedSinceTrim":0}
`,
			want: map[string]float64{
				"memdoctor_malloc_system_bytes": 2048, "memdoctor_malloc_in_use_bytes": 1024, "memdoctor_malloc_free_bytes": 1024,
				"memdoctor_malloc_arenas": 4,
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t)
			p := filepath.Join(dir, "proc", "7130")
			maps, err := os.OpenFile(filepath.Join(p, "maps"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = maps.WriteString("7f6b67500000-7f6b67510000 r-xp 00000000 fe:00 4 /var/cache/memdoctor/x/" + preload.LibName + "\n")
			if cerr := maps.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "environ"), []byte("HOME=/root\x00MEMDOCTOR_STATS=/run/stats.%p.jsonl\x00"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(p, "root", "run"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "root", "run", "stats.7130.jsonl"), []byte(c.stats), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := collectDir(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			s := &res.Snapshot
			if v, ok := s.Get("memdoctor_process_preload", "pid", "7130"); !ok || v != 1 {
				t.Fatalf("memdoctor_process_preload %v %v, want 1; notes %+v", v, ok, res.Notes)
			}
			for _, name := range []string{"memdoctor_malloc_system_bytes", "memdoctor_malloc_in_use_bytes", "memdoctor_malloc_free_bytes",
				"memdoctor_malloc_arenas", "memdoctor_malloc_trim_seconds"} {
				got, ok := s.Get(name, "pid", "7130")
				want, wantOK := c.want[name]
				if ok != wantOK || got != want {
					t.Errorf("%s = %v (present %v), want %v (present %v); notes %+v", name, got, ok, want, wantOK, res.Notes)
				}
			}
		})
	}
}

// memdoctor's own process is named as any other when it maps a C library
// (a cgo build: glibc's malloc), and has no allocator named when it maps
// none (a build without cgo, the released one), without its executable
// being read.
func TestMallocServerOfItself(t *testing.T) {
	self := os.Getpid()
	res, err := collect.Collect(procfs.NewFS("/"), collect.Options{TopProcesses: 1, ArenaScan: true, Allocators: true, Live: true,
		Focus: collect.ProcessFocus{PIDs: []int{self}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Snapshot.Get("memdoctor_process_rss_bytes", "pid", strconv.Itoa(self)); !ok {
		t.Fatalf("this process is not in the table: %+v", res.Notes)
	}
	maps, err := procfs.NewFS("/").ProcMaps(self)
	if err != nil {
		t.Fatal(err)
	}
	libc := false
	for _, m := range maps {
		libc = libc || strings.Contains(m.Path, "/libc.so")
	}
	got := ""
	for m := range res.Snapshot.Each("memdoctor_process_allocator_info", "pid", strconv.Itoa(self)) {
		got = m.Labels.Get("allocator")
	}
	want := ""
	if libc {
		want = "glibc"
	}
	if got != want {
		t.Errorf("this process (libc mapped: %v) has allocator %q, want %q", libc, got, want)
	}
}
