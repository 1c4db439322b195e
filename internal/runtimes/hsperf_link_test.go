//go:build linux

package runtimes

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// fakeJVM starts, as uid 65534 in a mount namespace of its own with a
// private /tmp, a process that maps a library named libjvm.so (so that
// memdoctor takes it for a JVM) and has made its perf-data file
// /tmp/hsperfdata_nobody/PID with setup (a shell command run as that
// user, $F the file's path, $$ the pid; its descriptor 4 reads a real
// perf-data file). It returns the process' pid.
func fakeJVM(t *testing.T, setup string) int {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (a mount namespace, another user)")
	}
	for _, p := range []string{"gcc", "unshare", "setpriv"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed", p)
		}
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "jvm.c")
	if err := os.WriteFile(src, []byte("int jvm_marker(void) { return 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libjvm.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	perf, err := filepath.Abs("testdata/hsperfdata-g1-jdk17")
	if err != nil {
		t.Fatal(err)
	}
	// The test's files are under this namespace's /tmp, which the new one
	// hides: the library is copied in through a descriptor.
	script := `exec 3<` + lib + ` 4<` + perf + ` && mount -t tmpfs -o mode=1777 tmpfs /tmp && cat <&3 >/tmp/libjvm.so && exec 3<&- &&
mkdir -m 0755 /tmp/hsperfdata_nobody && chown 65534 /tmp/hsperfdata_nobody &&
exec setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD=/tmp/libjvm.so sh -c 'F=/tmp/hsperfdata_nobody/$$; ` + setup + ` && echo ready && exec sleep 600'`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("the process did not start: %q", sc.Text())
	}
	// unshare execs sh, which execs setpriv, env, sh and sleep: one pid.
	// The sh that says ready maps the library too, so the wait is for
	// sleep (a loaded host read the maps of that sh, then found no JVM
	// mid-exec).
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		maps, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
		if strings.TrimSpace(string(comm)) == "sleep" && strings.Contains(string(maps), "libjvm.so") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d maps no libjvm.so", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pid
}

// jvmReading reads the runtimes of pid as check and record do.
func jvmReading(t *testing.T, pid int) (*Reading, string) {
	t.Helper()
	res := Read(context.Background(), procfs.NewFS("/"), Options{PIDs: []int{pid}, NoHostJVMs: true})
	var notes []string
	for _, n := range res.Notes {
		notes = append(notes, n.Source+": "+n.Message)
	}
	for _, rd := range res.Readings {
		if rd.PID == pid && rd.Source == "hsperfdata" {
			return rd, strings.Join(notes, "\n")
		}
	}
	return nil, strings.Join(notes, "\n")
}

// TestHsperfLinkToRootFile: a process in its own mount namespace, as an
// unprivileged user, links its perf-data file to a root-only file (a
// real perf-data file, so that reading it would give GC values, and
// another holding a secret). memdoctor, as root, reads neither: no reading
// from root's file (so no finding, nothing on /metrics), and the note
// tells neither content nor size. The same process with its own file is
// read.
func TestHsperfLinkToRootFile(t *testing.T) {
	perf, err := os.ReadFile("testdata/hsperfdata-g1-jdk17")
	if err != nil {
		t.Fatal(err)
	}
	secrets := t.TempDir()
	rootPerf := filepath.Join(secrets, "root-perf")
	if err := os.WriteFile(rootPerf, perf, 0o600); err != nil {
		t.Fatal(err)
	}
	rootOther := filepath.Join(secrets, "root-other")
	if err := os.WriteFile(rootOther, []byte(strings.Repeat("secret ", 1234)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The control: the process' own file (a copy it made) is read.
	pid := fakeJVM(t, "cat <&4 >$F")
	rd, notes := jvmReading(t, pid)
	if rd == nil || len(rd.Metrics()) == 0 {
		t.Fatalf("the process' own perf-data file was not read: %s", notes)
	}

	for name, target := range map[string]string{"perf": rootPerf, "other": rootOther} {
		pid := fakeJVM(t, "ln -s "+target+" $F")
		rd, notes := jvmReading(t, pid)
		if rd != nil {
			t.Errorf("%s: root's %s was read through the link: %d metrics", name, target, len(rd.Metrics()))
		}
		// Before, the note quoted the first bytes as a magic number.
		if strings.Contains(notes, "secret") || strings.Contains(notes, "magic") || strings.Contains(notes, strconv.Itoa(len("secret ")*1234)) {
			t.Errorf("%s: the note tells the file: %s", name, notes)
		}
		if !strings.Contains(notes, "hsperfdata pid "+strconv.Itoa(pid)) {
			t.Errorf("%s: no note on the JVM's file: %s", name, notes)
		}
		t.Logf("%s: %s", name, notes)
	}

	// A hard link to root's file, made by root in the process' namespace
	// (an unprivileged user may not link a file it cannot read): it is no
	// link to follow, but root's, not the JVM's user's.
	pid = fakeJVM(t, "true")
	link := filepath.Join("/proc", strconv.Itoa(pid), "root", "tmp", "hsperfdata_nobody", strconv.Itoa(pid))
	if err := exec.Command("cp", rootPerf, link).Run(); err != nil {
		t.Fatal(err)
	}
	if rd, notes := jvmReading(t, pid); rd != nil || !strings.Contains(notes, "owned by uid 0") {
		t.Errorf("root's file in the JVM's directory was read (%v): %s", rd != nil, notes)
	}
}
