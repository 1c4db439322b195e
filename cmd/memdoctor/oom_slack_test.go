package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// TestCheckOOMSlackPerCgroup: a glibc process that keeps most of what it
// freed (the hoarding workload: 4 threads, 32 MiB each, all but 1/32
// freed) runs in a memory cgroup of the test's own, below another. check
// --malloc reads its allocator, and check --cgroup counts the freed memory
// it keeps in the OOM split of its cgroup and of the parent above it
// (joined by the process' cgroup), naming the process, and says in one
// line that a trim gives it back without a restart.
func TestCheckOOMSlackPerCgroup(t *testing.T) {
	requirePtraceHere(t)
	bin := buildWorkload(t)
	parentName := fmt.Sprintf("memdoctor-slack-%d-%d", os.Getpid(), time.Now().UnixNano())
	parent := testCgroup(t, "", parentName, 0)
	child := testCgroup(t, parent, "app", 512<<20)
	w := startWorkload(t, "/bin/sh", nil, "-c", `echo $$ > "$0"/cgroup.procs && exec "$1" hoard 4 32 4`, child, bin)
	self := parseReady(t, w.do(t, "info"))
	if self["fordblks"] < 64<<20 {
		t.Fatalf("the workload keeps only %.0f bytes free: the case proves nothing", self["fordblks"])
	}
	pcg, ccg := "/"+parentName, "/"+parentName+"/app"
	for _, cg := range []string{ccg, pcg} {
		r := checkJSON(t, "--top", "30", "--malloc", "4", "--pid", w.pid(), "--cgroup", cg)
		if r.Cgroup == nil || r.Cgroup.OOM == nil {
			t.Fatalf("check --cgroup %s: no OOM split: %+v (notes %+v)", cg, r.Cgroup, r.Notes)
		}
		m := r.Cgroup.OOM
		t.Logf("%s: unreclaimable %.1f MiB, allocator slack %.1f MiB, runtime slack %.1f MiB, the workload's own fordblks %.1f MiB",
			cg, float64(m.UnreclaimableBytes)/(1<<20), float64(m.AllocatorSlackBytes)/(1<<20), float64(m.RuntimeSlackBytes)/(1<<20), self["fordblks"]/(1<<20))
		if a := float64(m.AllocatorSlackBytes); a < 0.8*self["fordblks"] || a > 1.05*self["fordblks"] {
			t.Errorf("%s: allocator slack %.0f, the workload's own fordblks %.0f: want within 80..105%%", cg, a, self["fordblks"])
		}
		if m.AllocatorSlackBytes > m.AnonBytes {
			t.Errorf("%s: allocator slack %d over the cgroup's anon %d: it is counted in anon", cg, m.AllocatorSlackBytes, m.AnonBytes)
		}
		var from *model.SlackSource
		for i := range m.SlackFrom {
			if fmt.Sprint(m.SlackFrom[i].PID) == w.pid() {
				from = &m.SlackFrom[i]
			}
		}
		if from == nil || from.Kind != "allocator" || from.What != "glibc" {
			t.Errorf("%s: the slack does not name the workload (pid %s, glibc allocator): %+v", cg, w.pid(), m.SlackFrom)
		}
	}
	out, errOut, code := runCLI(t, "check", "--top", "30", "--malloc", "4", "--pid", w.pid(), "--cgroup", ccg)
	if code > 2 {
		t.Fatalf("check --cgroup exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "freed memory its allocators keep (1 process)") || !strings.Contains(out, "a collection or a trim gives back without a restart") {
		t.Errorf("check --cgroup %s does not say what a trim gives back:\n%s", ccg, out)
	}
	// The host's memory controller is v1: the charge of dying
	// descendants is said not to be measured, not shown as 0.
	if _, v2 := memoryHierarchy(t); !v2 && !strings.Contains(out, "dying: the charge held by dying descendants is not measured (cgroup v1") {
		t.Errorf("check --cgroup %s on v1 does not say the dying charge is not measured:\n%s", ccg, out)
	}
}

// TestCheckOOMSlackJVM: a JVM whose 320 MiB burst was freed keeps its
// grown heap committed (G1's defaults give nothing back while it idles);
// moved into a memory cgroup of the test's own, that heap less its live
// objects is counted in the cgroup's OOM split as heap its runtime holds
// free, naming the JVM.
func TestCheckOOMSlackJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JVM of up to 1 GiB for ~10 s")
	}
	dir := compileGcWorkload(t)
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	jvm := startService(t, url, "java", "-XX:+UseG1GC", "-Xms16m", "-Xmx1g", "-cp", dir, "GcWorkload", "burst", strconv.Itoa(port))
	heapURL := strings.Replace(url, "/metrics", "/heap", 1)
	waitHeap(t, heapURL, "burst JVM after its burst", func(_ map[string]float64, p string) bool { return p == "idle" })
	name := fmt.Sprintf("memdoctor-slack-jvm-%d-%d", os.Getpid(), time.Now().UnixNano())
	cgDir := testCgroup(t, "", name, 0)
	if err := os.WriteFile(cgDir+"/cgroup.procs", []byte(strconv.Itoa(jvm.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	// killed before the cgroup is removed (cleanups run last first)
	t.Cleanup(func() { _ = jvm.Process.Kill(); _, _ = jvm.Process.Wait() })
	before, _ := javaHeap(t, heapURL)
	r := checkJSON(t, "--cgroup", "/"+name)
	after, _ := javaHeap(t, heapURL)
	if before["committed"] < 256<<20 || before["used_after_gc"] > 64<<20 {
		t.Fatalf("the burst did not leave a large, empty heap: %v", before)
	}
	if r.Cgroup == nil || r.Cgroup.OOM == nil {
		t.Fatalf("check --cgroup /%s: no OOM split: %+v (notes %+v)", name, r.Cgroup, r.Notes)
	}
	m := r.Cgroup.OOM
	t.Logf("JVM says committed %.0f, used after its last collection %.0f; the cgroup's runtime slack %d from %+v",
		after["committed"], after["used_after_gc"], m.RuntimeSlackBytes, m.SlackFrom)
	between(t, "runtime slack", float64(m.RuntimeSlackBytes), 64<<20,
		max(before["committed"], after["committed"])-before["used_after_gc"]+1<<20)
	var from *model.SlackSource
	for i := range m.SlackFrom {
		if m.SlackFrom[i].PID == jvm.Process.Pid {
			from = &m.SlackFrom[i]
		}
	}
	if from == nil || from.Kind != "runtime" || from.What != "jvm" || from.Bytes != m.RuntimeSlackBytes {
		t.Errorf("the slack does not name the JVM (pid %d): %+v", jvm.Process.Pid, m.SlackFrom)
	}
}
