package collect_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/runtimes"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// collections sums a JVM's collections of every generation.
func collections(s *sample.Snapshot, pid int) (float64, bool) {
	ms := s.Select(runtimes.Collections, "pid", strconv.Itoa(pid))
	n := 0.0
	for _, m := range ms {
		n += m.Value
	}
	return n, len(ms) > 0
}

// check --gc-interval's second reading: a JVM that collects twice a second
// is read again GCInterval later; the first reading's runtime series come
// back as the earlier snapshot, the result holds the second's (more
// collections, a later time) and keeps every other series; the wait is
// drawn. With no interval nothing is read again.
func TestReadRuntimesAgainJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM for ~10 s")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("javac missing: apt-get install openjdk-17-jdk-headless (scripts/install-test-deps.sh)")
	}
	t.Parallel()
	dir := t.TempDir()
	if out, err := exec.Command("javac", "-d", dir, filepath.Join("..", "..", "testdata", "programs", "java", "GcWorkload.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_ = ln.Close()
	// churn keeps some 80 MiB live: with a 64 MiB heap its main thread
	// died of OutOfMemoryError within a second or two and the JVM stopped
	// collecting, or (once, in CI) exited between the two readings.
	jvm := exec.Command("java", "-XX:+UseG1GC", "-Xmx160m", "-cp", dir, "GcWorkload", "churn", port)
	jvmErr, err := os.Create(filepath.Join(dir, "jvm.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer jvmErr.Close()
	jvm.Stderr = jvmErr
	if err := jvm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jvm.Process.Kill(); _ = jvm.Wait() })
	pid := jvm.Process.Pid

	fsys := procfs.NewFS("/")
	const interval = 1500 * time.Millisecond
	opt := collect.Options{TopProcesses: 1, Live: true, Runtimes: true, Focus: collect.ProcessFocus{PIDs: []int{pid}}, GCInterval: interval}
	var res *collect.Result
	for deadline := time.Now().Add(30 * time.Second); ; {
		if res, err = collect.Collect(fsys, opt); err != nil {
			t.Fatal(err)
		}
		// Once it has collected: a JVM still starting (slow on a busy
		// host) has its counters at 0 and may not collect within the
		// interval.
		if n, ok := collections(&res.Snapshot, pid); ok && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no collection read of the JVM (pid %d) in 30 s: %+v", pid, res.Notes)
		}
		time.Sleep(200 * time.Millisecond)
	}
	first := res.Snapshot.Time
	before, _ := collections(&res.Snapshot, pid)
	total, _ := res.Snapshot.Get("node_memory_MemTotal_bytes")
	rss := len(res.Snapshot.Select("memdoctor_process_rss_bytes", "pid", strconv.Itoa(pid)))

	var label string
	var last, of int64
	bars := func(l string) (func(done, total int64), func()) {
		label = l
		return func(d, n int64) { last, of = d, n }, func() {}
	}
	earlier := collect.ReadRuntimesAgain(context.Background(), fsys, opt, res, bars)
	if earlier == nil {
		t.Fatal("no second reading of a JVM with GC data")
	}
	if !earlier.Time.Equal(first) || res.Snapshot.Time.Sub(first) < interval {
		t.Errorf("earlier at %v, later at %v: want the first reading's time, then %v later", earlier.Time, res.Snapshot.Time, interval)
	}
	if n, ok := collections(earlier, pid); !ok || n != before {
		t.Errorf("the earlier snapshot has %v collections (%v), the first reading %v", n, ok, before)
	}
	after, ok := collections(&res.Snapshot, pid)
	if !ok || after <= before {
		t.Errorf("collections %v then %v over %v of a JVM collecting twice a second", before, after, interval)
		for _, m := range res.Snapshot.Metrics {
			if strings.HasPrefix(m.Name, "memdoctor_runtime") {
				t.Logf("second reading: %s %v %v", m.Name, m.Labels, m.Value)
			}
		}
		t.Logf("second reading: notes %+v", res.Notes)
		// Why the JVM was not read again: alive, its mappings, its perf data.
		st, serr := fsys.ProcStatusBrief(pid)
		maps, merr := fsys.ProcMaps(pid)
		det, dok := runtimes.Detect(maps, nil)
		hs, herr := runtimes.HsperfPath(fsys, pid)
		t.Logf("the JVM now: status %v (%v); %d mappings (%v), detected %+v %v; perf data %q (%v)", st, serr, len(maps), merr, det, dok, hs, herr)
		if b, err := os.ReadFile(jvmErr.Name()); err == nil {
			t.Logf("the JVM's standard error:\n%s", b)
		}
	}
	if v, _ := res.Snapshot.Get("node_memory_MemTotal_bytes"); v != total || total <= 0 ||
		len(res.Snapshot.Select("memdoctor_process_rss_bytes", "pid", strconv.Itoa(pid))) != rss || rss == 0 {
		t.Errorf("the second reading lost the other series: MemTotal %v (was %v), %d rss series (was %d)", v, total, len(res.Snapshot.Select("memdoctor_process_rss_bytes", "pid", strconv.Itoa(pid))), rss)
	}
	if label != "measuring GC rates" || of != interval.Milliseconds() || last < of {
		t.Errorf("the wait drawn as %q, %d of %d ms", label, last, of)
	}

	opt.GCInterval = 0
	res, err = collect.Collect(fsys, opt)
	if err != nil {
		t.Fatal(err)
	}
	n := len(res.Snapshot.Metrics)
	if e := collect.ReadRuntimesAgain(context.Background(), fsys, opt, res, nil); e != nil || len(res.Snapshot.Metrics) != n {
		t.Errorf("no interval: read again (%v), %d series then %d", e != nil, n, len(res.Snapshot.Metrics))
	}
}
