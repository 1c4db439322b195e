package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/heapprof"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// workloadPipe is a process speaking testdata/programs/leak_workload.c's
// protocol: "leak MIB" on stdin, a "ready leaked=N healthy_live=M" line
// back on stdout.
type workloadPipe struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	lines []string // what it printed
}

// startPipe starts cmd with its stdin and stdout piped; it is ended when
// the test ends.
func startPipe(t *testing.T, cmd *exec.Cmd) *workloadPipe {
	t.Helper()
	w := &workloadPipe{cmd: cmd}
	w.cmd.Stderr = os.Stderr
	var err error
	if w.in, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.out = bufio.NewScanner(out)
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.in.Close() // EOF ends the workload
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
	})
	return w
}

// leakWorkload is testdata/programs/leak_workload.c running under the
// preload library with sampling on.
type leakWorkload struct {
	*workloadPipe
	dumps string // the profile path pattern's directory
}

// startLeakWorkload builds the library and the workload (with cflags) and
// starts it with MEMDOCTOR_PROFILE=rate, dumping every 300 ms.
func startLeakWorkload(t *testing.T, rate string, cflags ...string) *leakWorkload {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	src := filepath.Join(repoRoot(t), "testdata", "programs", "leak_workload.c")
	bin := buildOnce(t, "leak_workload"+strings.Join(cflags, ""), func(dir string) (string, error) {
		return gcc(filepath.Join(dir, "leak_workload"), src, append(cflags, "-pthread")...)
	})
	return startLeakCmd(t, rate, exec.Command(bin))
}

// startLeakCmd builds the library and starts cmd under it with
// MEMDOCTOR_PROFILE=rate, dumping every 300 ms. cmd speaks the protocol of
// leak_workload.c on stdin and stdout.
func startLeakCmd(t *testing.T, rate string, cmd *exec.Cmd) *leakWorkload {
	t.Helper()
	dir := t.TempDir()
	// The library is built once for every test, in a cache of the tests'
	// own (not the user's).
	lib := buildOnce(t, "preload-cache", func(cache string) (string, error) {
		return preload.Build(context.Background(), preload.BuildOptions{CacheDir: cache})
	})
	dumps := filepath.Join(dir, "dumps")
	if err := os.Mkdir(dumps, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMDOCTOR_PROFILE="+rate,
		"MEMDOCTOR_PROFILE_INTERVAL=300ms", "MEMDOCTOR_PROFILE_PATH="+filepath.Join(dumps, "heap.%p"))
	return &leakWorkload{workloadPipe: startPipe(t, cmd), dumps: dumps}
}

// leak makes the workload leak mib MiB and returns the bytes it has leaked
// in all, as it counts them itself.
func (w *workloadPipe) leak(t *testing.T, mib int) int64 {
	t.Helper()
	if _, err := fmt.Fprintf(w.in, "leak %d\n", mib); err != nil {
		t.Fatal(err)
	}
	if !w.out.Scan() {
		t.Fatalf("workload ended: %v", w.out.Err())
	}
	w.lines = append(w.lines, w.out.Text())
	var leaked, healthy int64
	if _, err := fmt.Sscanf(w.out.Text(), "ready leaked=%d healthy_live=%d", &leaked, &healthy); err != nil || healthy != 0 {
		t.Fatalf("workload said %q", w.out.Text())
	}
	return leaked
}

// waitDump waits until the library has written a profile after now.
func (w *leakWorkload) waitDump(t *testing.T) {
	t.Helper()
	since := time.Now()
	p := filepath.Join(w.dumps, "heap."+strconv.Itoa(w.cmd.Process.Pid))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st, err := os.Stat(p); err == nil && st.ModTime().After(since) {
			return
		}
	}
	t.Fatalf("no profile written to %s within 10 s", p)
}

func leaksJSON(t *testing.T, args ...string) *heapprof.Report {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"leaks", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("leaks %v exited %d: %s", args, code, errOut)
	}
	var r heapprof.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("leaks --json: %v\n%s", err, out)
	}
	return &r
}

func within(got, want int64, frac float64) bool {
	d := float64(got - want)
	return d <= frac*float64(want) && -d <= frac*float64(want)
}

// The leaking call path is the top site by bytes in use and by growth,
// its bytes within 10% of what the workload counts (sampled at 16 KiB: the
// estimate of ~50 MB of small blocks has a relative error of about
// sqrt(16 KiB / 50 MB) = 1.8%, so 10% is over 5 standard errors; at 64 KiB
// it was under 3, and one loaded run landed at +10.5%); the healthy path,
// which allocates as much through every allocation function and frees it,
// holds nothing and does not grow; go tool pprof reads the profile written
// and names the same function first.
func TestLeaksFindsTheLeakingSite(t *testing.T) {
	w := startLeakWorkload(t, "16KiB", "-O1", "-fno-omit-frame-pointer")
	first := w.leak(t, 48)
	w.waitDump(t)
	pid := strconv.Itoa(w.cmd.Process.Pid)
	pb := filepath.Join(t.TempDir(), "heap.pb.gz")
	type result struct {
		r    *heapprof.Report
		out  string
		code int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := runCLI(t, "leaks", pid, "--json", "--interval", "2s", "--output", pb)
		var r heapprof.Report
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				code = -1
			}
		}
		done <- result{&r, out + errOut, code}
	}()
	time.Sleep(700 * time.Millisecond) // the first profile is read at once
	second := w.leak(t, 32)
	res := <-done
	if res.code != 0 {
		t.Fatalf("leaks --interval exited %d: %s", res.code, res.out)
	}
	r := res.r
	if len(r.Sites) == 0 {
		t.Fatalf("no sites: %s", res.out)
	}
	top := r.Sites[0]
	if want := []string{"parse_record", "ingest_batch", "worker_main"}; len(top.Stack) < 3 || !slices.Equal(top.Stack[:3], want) {
		t.Errorf("top site %v, want %v first", top.Stack, want)
	}
	if !within(top.InUseBytes, second, 0.10) {
		t.Errorf("top site holds %d bytes, the workload leaked %d (want within 10%%)", top.InUseBytes, second)
	}
	if len(r.Growth) == 0 || r.Growth[0].Stack[0] != "parse_record" {
		t.Fatalf("growth %+v, want parse_record first", r.Growth)
	}
	if !within(r.Growth[0].GrowthBytes, second-first, 0.15) {
		t.Errorf("parse_record grew %d bytes, the workload leaked %d more (want within 15%%)", r.Growth[0].GrowthBytes, second-first)
	}
	for _, s := range append(r.Growth, r.Sites...) {
		if slices.Contains(s.Stack, "scratch_buffer") {
			t.Errorf("the healthy path is listed: %+v", s)
		}
	}
	t.Logf("parse_record: %d bytes in use (workload: %d), +%d (workload: +%d), %d samples",
		top.InUseBytes, second, r.Growth[0].GrowthBytes, second-first, r.Samples)

	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is needed to read the profile: %v", err)
	}
	out, err := exec.Command(goTool, "tool", "pprof", "-top", pb).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	// The first row after the header is the top function by inuse_space.
	var first3 []string
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") && i+1 < len(lines) {
			first3 = strings.Fields(lines[i+1])
			break
		}
	}
	if len(first3) == 0 || first3[len(first3)-1] != "parse_record" {
		t.Errorf("go tool pprof -top: want parse_record first:\n%s", out)
	}
}

// Without frame pointers the stack beyond the allocating function may be
// cut short or wrong, but the allocating function and its bytes are right
// and the program runs on.
func TestLeaksWithoutFramePointers(t *testing.T) {
	w := startLeakWorkload(t, "16KiB", "-O2", "-fomit-frame-pointer")
	leaked := w.leak(t, 48)
	w.waitDump(t)
	r := leaksJSON(t, strconv.Itoa(w.cmd.Process.Pid))
	if len(r.Sites) == 0 || r.Sites[0].Stack[0] != "parse_record" {
		t.Fatalf("sites %+v, want parse_record first", r.Sites)
	}
	if !within(r.Sites[0].InUseBytes, leaked, 0.10) {
		t.Errorf("parse_record holds %d bytes, the workload leaked %d", r.Sites[0].InUseBytes, leaked)
	}
	if again := w.leak(t, 8); again <= leaked {
		t.Errorf("the workload stopped counting: %d after %d", again, leaked)
	}
	t.Logf("stack without frame pointers: %v", r.Sites[0].Stack)
}

// A process without the library, or without MEMDOCTOR_PROFILE, is told
// how to start it.
func TestLeaksNoProfile(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Until sleep runs: before its exec the child is a copy of this test
	// binary, which has no libc.
	maps := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "maps")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(maps); strings.Contains(string(b), "libc.so.6") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep (pid %d) never mapped libc.so.6", cmd.Process.Pid)
		}
	}
	_, errOut, code := runCLI(t, "leaks", strconv.Itoa(cmd.Process.Pid))
	if code == 0 || !strings.Contains(errOut, "MEMDOCTOR_PROFILE=512KiB") {
		t.Errorf("exit %d, stderr %q: want the way to start it", code, errOut)
	}
}

// leaksOverInterval runs `leaks PID --json --interval 2s` while the
// workload, which has leaked first bytes, leaks mib MiB more; it returns
// the report and the workload's count at the end.
func leaksOverInterval(t *testing.T, w *leakWorkload, mib int, extra ...string) (*heapprof.Report, int64) {
	t.Helper()
	type result struct {
		r    *heapprof.Report
		out  string
		code int
	}
	done := make(chan result, 1)
	go func() {
		args := append([]string{"leaks", strconv.Itoa(w.cmd.Process.Pid), "--json", "--interval", "2s"}, extra...)
		out, errOut, code := runCLI(t, args...)
		var r heapprof.Report
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				code = -1
			}
		}
		done <- result{&r, out + errOut, code}
	}()
	time.Sleep(700 * time.Millisecond) // the first profile is read at once
	leaked := w.leak(t, mib)
	res := <-done
	if res.code != 0 {
		t.Fatalf("leaks --interval exited %d: %s", res.code, res.out)
	}
	return res.r, leaked
}

// checkExtensionLeak checks a report on an interpreter whose C extension
// (object, a file name) leaks through keep_record: it is the top site by
// bytes in use and by growth, in object, within 10% of what the extension
// counts; the healthy path (scratch_buffer) is in neither list.
func checkExtensionLeak(t *testing.T, r *heapprof.Report, object string, first, second int64) {
	t.Helper()
	if len(r.Sites) == 0 {
		t.Fatal("no sites")
	}
	top := r.Sites[0]
	if top.Stack[0] != "keep_record" || filepath.Base(top.Object) != object {
		t.Errorf("top site %s, want keep_record in %s; sites: %+v", top.Title(4), object, r.Sites)
	}
	if !within(top.InUseBytes, second, 0.10) {
		t.Errorf("keep_record holds %d bytes, the extension kept %d (want within 10%%)", top.InUseBytes, second)
	}
	if len(r.Growth) == 0 || r.Growth[0].Stack[0] != "keep_record" {
		t.Fatalf("growth %+v, want keep_record first", r.Growth)
	}
	if !within(r.Growth[0].GrowthBytes, second-first, 0.15) {
		t.Errorf("keep_record grew %d bytes, the extension kept %d more (want within 15%%)", r.Growth[0].GrowthBytes, second-first)
	}
	for _, s := range append(r.Growth, r.Sites...) {
		if slices.Contains(s.Stack, "scratch_buffer") || slices.Contains(s.Stack, "scratch") {
			t.Errorf("the healthy path is listed: %s", s.Title(4))
		}
	}
	t.Logf("top site %s: %d bytes in use (extension: %d), +%d (extension: +%d), %d samples",
		top.Title(4), top.InUseBytes, second, r.Growth[0].GrowthBytes, second-first, r.Samples)
}

// extensionSource is testdata/programs/leakext.
func extensionSource(t *testing.T) string {
	return filepath.Join(repoRoot(t), "testdata", "programs", "leakext")
}

// A Python loop calls a C extension whose keep_record leaks with malloc
// and whose scratch path frees what it takes: leaks names keep_record in
// pyleak.so as the top site and the top growth, with the extension's own
// count, and not the healthy path.
func TestLeaksPythonExtension(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	// The headers of this very interpreter (python3-config may belong to another).
	inc, err := exec.Command(py, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])").Output()
	if err != nil {
		t.Fatalf("python3 include dir: %v", err)
	}
	include := strings.TrimSpace(string(inc))
	if _, err := os.Stat(filepath.Join(include, "Python.h")); err != nil {
		t.Skipf("Python.h not installed (python3-dev): %v", err)
	}
	src, dir := extensionSource(t), t.TempDir()
	args := []string{"-O1", "-fno-omit-frame-pointer", "-shared", "-fPIC", "-I" + include,
		"-o", filepath.Join(dir, "pyleak.so"), filepath.Join(src, "pyleak.c")}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
	w := startLeakCmd(t, "16KiB", exec.Command(py, filepath.Join(src, "leak_driver.py"), dir))
	first := w.leak(t, 32)
	w.waitDump(t)
	r, second := leaksOverInterval(t, w, 32)
	checkExtensionLeak(t, r, "pyleak.so", first, second)
}

// The same with a Ruby C extension, built against ruby's own headers.
func TestLeaksRubyExtension(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	rb, err := exec.LookPath("ruby")
	if err != nil {
		t.Skip("ruby not installed")
	}
	out, err := exec.Command(rb, "-rrbconfig", "-e", `puts RbConfig::CONFIG["rubyhdrdir"], RbConfig::CONFIG["rubyarchhdrdir"]`).Output()
	if err != nil {
		t.Fatalf("ruby header dirs: %v", err)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 2 {
		t.Fatalf("ruby header dirs: %q", out)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "ruby.h")); err != nil {
		t.Skipf("ruby.h not installed (ruby-dev): %v", err)
	}
	src, dir := extensionSource(t), t.TempDir()
	args := []string{"-O1", "-fno-omit-frame-pointer", "-shared", "-fPIC", "-I" + dirs[0], "-I" + dirs[1],
		"-o", filepath.Join(dir, "rbleak.so"), filepath.Join(src, "rbleak.c")}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
	w := startLeakCmd(t, "16KiB", exec.Command(rb, filepath.Join(src, "leak_driver.rb"), dir))
	first := w.leak(t, 32)
	w.waitDump(t)
	r, second := leaksOverInterval(t, w, 32)
	checkExtensionLeak(t, r, "rbleak.so", first, second)
}

// With the workload built with -g, the leaking site carries the source line
// of its malloc (the line marked "leak-site" in the source), in the JSON,
// in the text and in the pprof profile's lines (go tool pprof -lines); the
// time to symbolize the profile with and without line info is logged.
func TestLeaksSourceLines(t *testing.T) {
	w := startLeakWorkload(t, "16KiB", "-O1", "-g", "-fno-omit-frame-pointer")
	leaked := w.leak(t, 48)
	w.waitDump(t)
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "programs", "leak_workload.c"))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "leak-site") && strings.Contains(l, "malloc(") {
			want = fmt.Sprintf("leak_workload.c:%d", i+1)
		}
	}
	if want == "" {
		t.Fatal("no line marked leak-site with a malloc in leak_workload.c")
	}
	pid := strconv.Itoa(w.cmd.Process.Pid)
	pb := filepath.Join(t.TempDir(), "heap.pb.gz")
	r := leaksJSON(t, pid, "--output", pb)
	if len(r.Sites) == 0 || r.Sites[0].Stack[0] != "parse_record" {
		t.Fatalf("sites %+v, want parse_record first", r.Sites)
	}
	top := r.Sites[0]
	if len(top.Lines) != len(top.Stack) || top.Lines[0] != want {
		t.Errorf("parse_record's lines %q, want %s first", top.Lines, want)
	}
	if !within(top.InUseBytes, leaked, 0.10) {
		t.Errorf("parse_record holds %d bytes, the workload leaked %d", top.InUseBytes, leaked)
	}
	out, errOut, code := runCLI(t, "leaks", pid)
	if code != 0 || !strings.Contains(out, "parse_record at "+want) {
		t.Errorf("leaks exited %d, want \"parse_record at %s\" in:\n%s%s", code, want, out, errOut)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is needed to read the profile: %v", err)
	}
	pp, err := exec.Command(goTool, "tool", "pprof", "-top", "-lines", pb).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top -lines: %v\n%s", err, pp)
	}
	found := false
	for _, l := range strings.Split(string(pp), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[len(f)-2] == "parse_record" && strings.HasSuffix(f[len(f)-1], "/"+want) {
			found = true
		}
	}
	if !found {
		t.Errorf("go tool pprof -top -lines: no parse_record at %s:\n%s", want, pp)
	}

	// The cost of line info: the same dump symbolized both ways, each with
	// a fresh symbolizer (every file read anew).
	data, err := os.ReadFile(filepath.Join(w.dumps, "heap."+pid))
	if err != nil {
		t.Fatal(err)
	}
	d, err := heapprof.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	open := func(m procfs.Mapping) (*os.File, error) { return os.Open(m.Path) }
	took := func(lines bool) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			s := heapprof.NewSymbolizer(open)
			s.SetLines(lines)
			start := time.Now()
			heapprof.NewReport(s, d, nil)
			heapprof.Profile(s, d)
			best = min(best, time.Since(start))
		}
		return best
	}
	with, without := took(true), took(false)
	t.Logf("symbolizing a profile of %d stacks (report and pprof): %s with DWARF line info, %s without",
		len(d.Stacks), with.Round(time.Microsecond), without.Round(time.Microsecond))
}
