package main

// malloc_arenas_many on a real JVM: its committed Java heap is anonymous
// memory in 64 MiB-aligned pieces, which the arena estimate from the maps
// counts, but it is not malloc's. With the heap (read from hsperfdata)
// subtracted, check stays quiet.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

func TestMallocArenasQuietOnJVMHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JVM with a 1 GiB heap")
	}
	dir := compileGcWorkload(t)
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	jvm := startService(t, url, "java", "-XX:+UseG1GC", "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch", "-XX:ParallelGCThreads=8", "-XX:ConcGCThreads=4",
		"-cp", dir, "GcWorkload", "healthy", strconv.Itoa(port))
	pid := jvm.Process.Pid
	time.Sleep(2 * time.Second)
	rep := runCheck(t, "--top", "10", "--gc-interval", "0", "--pid", strconv.Itoa(pid)) // a busy host has larger processes

	// The situation of the false positive: by the maps alone, many arenas
	// and a large anonymous memory.
	var seen bool
	for _, p := range rep.Processes {
		if p.PID != pid {
			continue
		}
		seen = true
		// check counts arenas from their heap headers; by the maps alone
		// (a capture's view) the heap's 64 MiB pieces look like arenas.
		maps, err := procfs.NewFS("/").ProcMaps(pid)
		if err != nil {
			t.Fatal(err)
		}
		byMaps, _ := collect.EstimateArenas(maps)
		if byMaps < 16 || p.AnonBytes < 768<<20 {
			t.Fatalf("the JVM does not look like many arenas by its maps (arenas %d, anon %d): the test proves nothing", byMaps, p.AnonBytes)
		}
		counted := "no"
		if p.MallocArenas != nil {
			counted = strconv.FormatInt(*p.MallocArenas, 10)
		}
		t.Logf("JVM pid %d: ~%d arenas by its maps, %s counted by check, %d MiB anonymous", pid, byMaps, counted, p.AnonBytes>>20)
	}
	if !seen {
		t.Fatalf("the JVM (pid %d) is not among the reported processes", pid)
	}
	rt := runtimesOfPID(rep, pid)
	if len(rt) != 1 || rt[0].HeapCommittedBytes == nil || *rt[0].HeapCommittedBytes < 1<<30-(1<<20) {
		t.Fatalf("the JVM's committed heap was not read: %+v", rt)
	}
	for _, f := range rep.Findings {
		if f.ID == "malloc_arenas_many" && strings.Contains(f.Subject, "(pid "+strconv.Itoa(pid)+")") {
			t.Errorf("malloc_arenas_many fired on the JVM's own heap: %s", f.Summary)
		}
	}
}
