package record

import (
	"bufio"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// v1Cgroup makes a memory cgroup of the test's own under the v1 memory
// hierarchy with the limit given, removed when the test ends (its
// processes killed first); it skips where there is no v1 memory
// controller to write.
func v1Cgroup(t *testing.T, limit int64) string {
	t.Helper()
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.limit_in_bytes")); err != nil {
		t.Skip("needs the v1 memory controller at " + root)
	}
	dir := filepath.Join(root, fmt.Sprintf("memdoctor-record-oom-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		for try := 0; try < 200; try++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("could not remove %s", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// worker is a python process in a cgroup that, on each line read, reads a
// file through the page cache ("read PATH") or holds N more MiB of
// anonymous memory ("grow N"), and answers "ok".
type worker struct {
	in  io.WriteCloser
	out *bufio.Reader
}

func startWorker(t *testing.T, dir string) *worker {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1"/cgroup.procs && exec python3 -u -c '
import os, sys
held = []
for line in sys.stdin:
    op, arg = line.split()
    if op == "grow":
        b = bytearray(int(arg) << 20)
        for i in range(0, len(b), 4096): b[i] = 1
        held.append(b)
    elif op == "read":
        with open(arg, "rb") as f:
            # drop what the page cache holds of it (charged to whoever
            # wrote it) so that the reading charges it here
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            while f.read(1 << 20): pass
    print("ok", flush=True)
'`, "sh", dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &worker{in: in, out: bufio.NewReader(out)}
}

func (w *worker) do(t *testing.T, op string) {
	t.Helper()
	if _, err := fmt.Fprintln(w.in, op); err != nil {
		t.Fatal(err)
	}
	line, err := w.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ok" {
		t.Fatalf("%s: %q %v", op, line, err)
	}
}

// bigFile writes n MiB to a file in the test's temporary directory.
func bigFile(t *testing.T, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for range n {
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRecordOOMSeries: a real memory cgroup kept at its 128 MiB limit by
// page cache (a 256 MiB file read in it) while its process adds 4 MiB of
// anonymous memory a minute: the recorder's /metrics gives its
// unreclaimable memory (the anon, not the page cache), the distance to
// the limit, and, once its samples show the rise, the time until the
// distance is used (what is left at 4 MiB a minute).
func TestRecordOOMSeries(t *testing.T) {
	const mib = 1 << 20
	const limit = 128 * mib
	dir := v1Cgroup(t, limit)
	cg := "/" + filepath.Base(dir)
	file := bigFile(t, 256)
	w := startWorker(t, dir)
	w.do(t, "grow 16")
	w.do(t, "read "+file)
	r, err := New(Config{DBPath: filepath.Join(t.TempDir(), "md.db"), Interval: time.Minute, Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t0 := time.Now()
	var body string
	for i := range 8 {
		if i > 0 {
			w.do(t, "grow 4")
		}
		r.Tick(t0.Add(time.Duration(i) * time.Minute))
		rec := httptest.NewRecorder()
		r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body = rec.Body.String()
		if i < 5 && strings.Contains(body, `memdoctor_cgroup_memory_oom_eta_seconds{cgroup="`+cg+`"}`) {
			t.Errorf("sample %d: a time to the OOM kill from %d samples, fewer than a trend needs", i, i+1)
		}
	}
	val := func(name string) (float64, bool) {
		for _, l := range strings.Split(body, "\n") {
			if rest, ok := strings.CutPrefix(l, name+`{cgroup="`+cg+`"} `); ok {
				v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
				return v, err == nil
			}
		}
		return 0, false
	}
	usage, ok := val("memdoctor_cgroup_memory_usage_bytes")
	if !ok || usage < 0.9*limit {
		t.Fatalf("the cgroup's usage %v (read %v): want it at its limit, read in full\n%s", usage, ok, body)
	}
	anon, _ := val("memdoctor_cgroup_memory_anon_bytes")
	unrec, ok := val("memdoctor_cgroup_memory_unreclaimable_bytes")
	if !ok || unrec < anon || unrec > anon+8*mib || anon < 44*mib {
		t.Errorf("unreclaimable %v (present %v), anon %v: want the anon (16 + 7×4 MiB) and a little kernel memory, not the page cache", unrec, ok, anon)
	}
	dist, ok := val("memdoctor_cgroup_memory_oom_distance_bytes")
	if !ok || dist != limit-unrec {
		t.Errorf("distance %v (present %v), want the limit less the unreclaimable: %v", dist, ok, limit-unrec)
	}
	eta, ok := val("memdoctor_cgroup_memory_oom_eta_seconds")
	want := dist / (4 * mib) * 60
	if !ok || eta < 0.8*want || eta > 1.25*want {
		t.Errorf("eta %v s (present %v), want about %v s: the distance at 4 MiB a minute", eta, ok, want)
	}
	t.Logf("usage %.1f MiB, anon %.1f MiB, unreclaimable %.1f MiB, distance %.1f MiB, eta %.0f s (at 4 MiB a minute: %.0f s)",
		usage/mib, anon/mib, unrec/mib, dist/mib, eta, want)
}
