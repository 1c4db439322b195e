package cgroups

import (
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// TestReadProcCgroupAllocatesWhatItKeeps: reading this process'
// proc/PID/cgroup on the live host costs the heap what the result keeps,
// not a 4 KiB read buffer more each time (the recorder reads it for every
// process it lists), and what it returns stays as read after later reads.
func TestReadProcCgroupAllocatesWhatItKeeps(t *testing.T) {
	if _, err := os.Stat("/proc/self/cgroup"); err != nil {
		t.Skip("no /proc")
	}
	f := procfs.NewFS("/")
	self := os.Getpid()
	first, err := ReadProcCgroup(f, self)
	if err != nil || len(first) == 0 {
		t.Fatalf("proc/%d/cgroup: %v, %v", self, first, err)
	}
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	for range n {
		if _, err := ReadProcCgroup(f, self); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&b)
	if _, err := f.Meminfo(); err != nil { // another file through the same buffers
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, ParseProcCgroup(raw)) {
		t.Errorf("the first result changed after later reads: %v", first)
	}
	// The parse's own cost and the path's and the open's, some 200 bytes;
	// a read buffer was 4 KiB more.
	per := float64(b.TotalAlloc-a.TotalAlloc) / n
	runtime.ReadMemStats(&a)
	for range n {
		ParseProcCgroup(raw)
	}
	runtime.ReadMemStats(&b)
	parse := float64(b.TotalAlloc-a.TotalAlloc) / n
	t.Logf("proc/PID/cgroup (%d bytes): %.0f bytes allocated a read, %.0f of them the parse", len(raw), per, parse)
	if per > parse+1024 {
		t.Errorf("reading proc/PID/cgroup allocates %.0f bytes, its parse %.0f: more than 1 KiB besides", per, parse)
	}
}

// The parse allocates what it keeps: one copy of the file (every ID and
// path is a part of it), the lines at once, and each line's controllers;
// splitting the file into lines and each line into fields first took
// twice as many allocations and three times the bytes.
func TestParseProcCgroupAllocatesWhatItKeeps(t *testing.T) {
	data := []byte("12:hugetlb:/\n11:cpu,cpuacct:/system.slice/redis.service\n10:memory:/system.slice/redis.service\n" +
		"9:pids:/system.slice/redis.service\n8:blkio:/system.slice\n7:net_cls,net_prio:/\n6:freezer:/\n5:devices:/system.slice/redis.service\n" +
		"4:perf_event:/\n3:cpuset:/\n2:rdma:/\n1:name=systemd:/system.slice/redis.service\n0::/system.slice/redis.service\n")
	lines := ParseProcCgroup(data)
	if len(lines) != 13 {
		t.Fatalf("%d lines parsed", len(lines))
	}
	withControllers := 12
	if n := testing.AllocsPerRun(100, func() { ParseProcCgroup(data) }); n > float64(withControllers+2) {
		t.Errorf("ParseProcCgroup of %d lines: %.0f allocations, want at most %d (the copy, the lines, each line's controllers)", len(lines), n, withControllers+2)
	}
}
