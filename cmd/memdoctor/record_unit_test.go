package main

// The recorder as the packaged unit runs it: its capability bounding set,
// no_new_privs, its system call filter (@system-service without
// @privileged, EPERM), address families, no writable executable memory, a
// read-only system but its state directory, and a private /tmp, all read
// from packaging/deb/memdoctor-record.service and reproduced without
// systemd. The services it exists for are not root's.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/store"
	"github.com/memdoctor/memdoctor/internal/unitsandboxtest"
	"github.com/memdoctor/memdoctor/preload"
)

// nobody is the services' user in these tests.
const nobody = 65534

// startWorkloadAs runs alloc_workload as uid and gid nobody.
func startWorkloadAs(t *testing.T, bin, dir string, env []string, args ...string) *workload {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workload{cmd: cmd, stdin: stdin, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	if _, err := w.out.ReadString('\n'); err != nil {
		t.Fatalf("%v did not become ready: %v", args, err)
	}
	return w
}

// copyExec copies an executable file into dir, readable by all.
func copyExec(t *testing.T, src, dir, name string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(dir, name)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// statusField returns a field of /proc/PID/status.
func statusField(pid int, name string) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for l := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(l, ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestRecorderUnitSandboxReadsServices: two services of uid 65534 run
// with the preload library, one leaking and one hoarding; `memdoctor
// record`, run as the unit runs it, stores their allocator series, and
// diagnose of the recording (×900: 40 s = 10 h) names the leak
// (process_leak) and the hoard (allocator_hoarding). Before, every read of
// a stats file failed in the sandbox with "setgroups: operation not
// permitted", and neither rule could fire on the shipped service.
func TestRecorderUnitSandboxReadsServices(t *testing.T) {
	skipShort(t)
	requireLinuxRoot(t)
	t.Parallel() // 40 s of recording its own processes
	u, err := unitsandboxtest.Parse(filepath.Join(repoRoot(t), "packaging", "deb", "memdoctor-record.service"))
	if err != nil {
		t.Fatal(err)
	}
	built := buildWorkload(t)
	libPath, errOut, code := runCLI(t, "preload", "--print-path")
	if code != 0 {
		t.Fatalf("preload --print-path: %s", errOut)
	}
	// The services' files: a directory they may enter, with their own
	// programs and library, and a home of theirs for the stats.
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := copyExec(t, built, base, "alloc_workload")
	lib := copyExec(t, strings.TrimSpace(libPath), base, preload.LibName)
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	env := func(name string) []string {
		return []string{"LD_PRELOAD=" + lib, "MEMDOCTOR_STATS=" + filepath.Join(home, name+".%p.jsonl"), "MEMDOCTOR_STATS_INTERVAL=250ms"}
	}

	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o750); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := unitsandboxtest.Command(t, u, unitsandboxtest.Options{
		Replace: map[string][]string{
			"/usr/bin/memdoctor":     {binary(t)},
			"$MEMDOCTOR_RECORD_ARGS": {"--interval", "500ms", "--force-interval", "--listen", addr, "--top", "40"},
		},
		StateDirs: []string{state},
		Env:       []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"},
	})
	logf, err := os.CreateTemp(t.TempDir(), "record-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &recorder{cmd: cmd, addr: addr, log: logf}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	r.waitHealthy(t, 20*time.Second)
	// The sandbox is the unit's: what the kernel says of the recorder.
	pid := cmd.Process.Pid
	mask, err := u.BoundingMask()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statusField(pid, "CapBnd"), fmt.Sprintf("%016x", mask); got != want {
		t.Errorf("the recorder's bounding set is %s, not the unit's %s", got, want)
	}
	if statusField(pid, "NoNewPrivs") != "1" || statusField(pid, "Seccomp") != "2" {
		t.Errorf("the recorder runs without no_new_privs or a seccomp filter: NoNewPrivs %s, Seccomp %s",
			statusField(pid, "NoNewPrivs"), statusField(pid, "Seccomp"))
	}

	leak := startWorkloadAs(t, bin, home, env("leak"), "leak", "4", "4", "1")
	hoard := startWorkloadAs(t, bin, home, env("hoard"), "hoard", "1", "32", "1")
	start := time.Now()
	for i := 1; time.Since(start) < 40*time.Second; i++ {
		time.Sleep(time.Second)
		if i%2 == 0 {
			leak.do(t, "more")
		}
		if i%4 == 0 {
			hoard.do(t, "spawn")
		}
	}
	time.Sleep(time.Second)
	t.Logf("the recorder's peak RSS in the sandbox: %s", statusField(pid, "VmHWM"))
	// The live page, rendered by a child of the recorder, in the sandbox.
	if code, body := r.get("/"); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("the live page in the unit's sandbox: %d %.300s", code, body)
	}
	r.stop(t)
	log := r.logText()

	db := filepath.Join(state, "memdoctor.db")
	st, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the recorder's store: %v\nlog:\n%s", err, log)
	}
	ss, err := st.Select(store.Query{Names: []string{"memdoctor_malloc_in_use_bytes"}})
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	points := map[string]int{}
	for _, s := range ss {
		points[s.Labels.Get("pid")] += len(s.Points)
	}
	for name, w := range map[string]*workload{"leak": leak, "hoard": hoard} {
		t.Logf("%s: %d allocator samples stored", name, points[w.pid()])
		// Every 500 ms for 40 s is 80; a busy host records fewer (31 seen
		// with the CPUs shared), and diagnose needs about ten.
		if points[w.pid()] < 10 {
			t.Errorf("%s (pid %s, uid %d): %d allocator samples stored in 40 s of recording every 500 ms", name, w.pid(), nobody, points[w.pid()])
		}
	}
	if t.Failed() {
		t.Fatalf("the recorder in the unit's sandbox:\n%s", log)
	}

	z := strings.TrimSuffix(db, ".db") + "-x900.db"
	compress(t, db, z, 900)
	rep := diagnoseJSON(t, z)
	got := func(id string, w *workload) *model.Finding {
		for i, f := range rep.Findings {
			if f.ID == id && strings.Contains(f.Subject, "pid "+w.pid()+")") {
				return &rep.Findings[i]
			}
		}
		return nil
	}
	for _, c := range []struct {
		name, id string
		w        *workload
	}{{"leak", "process_leak", leak}, {"hoard", "allocator_hoarding", hoard}} {
		if f := got(c.id, c.w); f == nil {
			t.Errorf("%s: %s did not fire on the recording of the sandboxed recorder", c.name, c.id)
		} else {
			t.Logf("%s: %s: %s", c.name, c.id, f.Summary)
		}
	}
}
