package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/elfsym/elfsymtest"
	"github.com/memdoctor/memdoctor/internal/heapprof"
)

// holdLib builds, in dir, libhold.so (no build ID, no DWARF, so that its
// source lines are looked for through .gnu_debuglink) whose hold(n)
// allocates n bytes, and holder, a program that holds 8 MiB through it
// and prints "ready", again for each line it reads, and ends at the end
// of its input.
func holdLib(t *testing.T, dir string) (lib, prog string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	lib, prog = filepath.Join(dir, "libhold.so"), filepath.Join(dir, "holder")
	src := map[string]string{
		"hold.c": "#include <stdlib.h>\n#include <string.h>\n" +
			"void *hold(size_t n) { void *p = malloc(n); memset(p, 1, n); return p; }\n",
		"holder.c": "#include <stdio.h>\n#include <stdlib.h>\nvoid *hold(size_t);\n" +
			"static void round(void) { for (int i = 0; i < 2048; i++) hold(4096);\n" +
			"  printf(\"ready\\n\"); fflush(stdout); }\n" +
			"int main(void) { char line[64]; round();\n" +
			"  while (fgets(line, sizeof line, stdin)) round(); return 0; }\n",
	}
	for name, s := range src {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"-shared", "-fPIC", "-O1", "-fno-omit-frame-pointer", "-Wl,--build-id=none", "-o", lib, filepath.Join(dir, "hold.c")},
		{"-O1", "-fno-omit-frame-pointer", "-o", prog, filepath.Join(dir, "holder.c"), "-L" + dir, "-lhold", "-Wl,-rpath," + dir},
	} {
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	return lib, prog
}

// runLeaksProcess runs memdoctor leaks as its own process. If it has not
// ended after wait, it gets SIGTERM, and SIGKILL 5 s later: hung says how
// long it had run, termSecs how long it took to end after SIGTERM (-1: it
// did not).
func runLeaksProcess(t *testing.T, wait time.Duration, args ...string) (out, errOut string, code int, took time.Duration, maxRSS int64, hung bool, termSecs float64) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"leaks"}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(wait):
		hung, termSecs = true, -1
		_ = cmd.Process.Signal(syscall.SIGTERM)
		sent := time.Now()
		select {
		case <-ended:
			termSecs = time.Since(sent).Seconds()
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-ended
		}
	}
	took = time.Since(start)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss << 10
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode(), took, maxRSS, hung, termSecs
}

// TestLeaksDebugLinkFIFO: a library whose .gnu_debuglink names a FIFO
// next to it. leaks looks there for its source lines: it refuses the FIFO
// at once instead of blocking in open (before: it hung there, and SIGTERM,
// which leaks catches, did not end it), and names the library's function.
func TestLeaksDebugLinkFIFO(t *testing.T) {
	requireLinuxRoot(t)
	dir := t.TempDir()
	lib, prog := holdLib(t, dir)
	debug := filepath.Join(dir, "libhold.debug")
	if err := os.WriteFile(debug, []byte("placeholder"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("objcopy", "--add-gnu-debuglink="+debug, lib).CombinedOutput(); err != nil {
		t.Skipf("objcopy: %v\n%s", err, out)
	}
	if err := os.Remove(debug); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(debug, 0o644); err != nil {
		t.Fatal(err)
	}
	w := startLeakCmd(t, "4KiB", exec.Command(prog))
	if !w.out.Scan() || w.out.Text() != "ready" {
		t.Fatalf("holder said %q", w.out.Text())
	}
	w.waitDump(t)
	out, errOut, code, took, _, hung, term := runLeaksProcess(t, 15*time.Second, strconv.Itoa(w.cmd.Process.Pid), "--json")
	if hung {
		t.Fatalf("leaks hung on the FIFO %s for 15 s; after SIGTERM it ended in %.1f s (-1: not within 5 s)\n%s", debug, term, errOut)
	}
	if code != 0 {
		t.Fatalf("leaks exited %d: %s", code, errOut)
	}
	var rep heapprof.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range rep.Sites {
		for _, f := range s.Stack {
			found = found || f == "hold"
		}
	}
	if !found {
		t.Errorf("no site names hold: %s", out)
	}
	t.Logf("leaks with a FIFO as the debug file: %v", took.Round(time.Millisecond))
}

// libcCopy returns the C library this host's programs run and its bytes.
func libcCopy(t *testing.T) (string, []byte) {
	t.Helper()
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/lib64/libc.so.6"} {
		if b, err := os.ReadFile(p); err == nil {
			return p, b
		}
	}
	t.Skip("no libc.so.6 found")
	return "", nil
}

// TestLeaksEBPFFIFOLibrary: the traced process allocates through its
// library, a FIFO is renamed over the library and the process exits, so
// its mapped files are gone and leaks --ebpf names its functions from
// the paths: it refuses the FIFO at once and ends (before: it blocked in
// open forever, SIGTERM or not).
func TestLeaksEBPFFIFOLibrary(t *testing.T) {
	needBPF(t)
	dir := t.TempDir()
	lib, prog := holdLib(t, dir)
	w := startPipe(t, exec.Command(prog))
	if !w.out.Scan() || w.out.Text() != "ready" {
		t.Fatalf("holder said %q", w.out.Text())
	}
	cmd, o, e, ended := startLeaksBinary(t, w.cmd.Process.Pid, "--duration", "60s", "--rate", "4KiB", "--json")
	if _, err := w.in.Write([]byte("hold\n")); err != nil {
		t.Fatal(err)
	}
	if !w.out.Scan() || w.out.Text() != "ready" {
		t.Fatalf("holder said %q", w.out.Text())
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, lib); err != nil {
		t.Fatal(err)
	}
	_ = w.in.Close()
	_ = w.cmd.Wait()
	exited := time.Now()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGTERM)
		sent := time.Now()
		select {
		case <-ended:
			t.Fatalf("leaks --ebpf hung after the target exited; SIGTERM ended it in %v\n%s", time.Since(sent).Round(time.Millisecond), e)
		case <-time.After(5 * time.Second):
			t.Fatalf("leaks --ebpf hung after the target exited, and SIGTERM did not end it within 5 s\n%s", e)
		}
	}
	t.Logf("leaks --ebpf ended %v after the target exited", time.Since(exited).Round(time.Millisecond))
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("leaks --ebpf exited %d: %s", code, e)
	}
	var rep heapprof.Report
	if err := json.Unmarshal(o.Bytes(), &rep); err != nil || len(rep.Sites) == 0 {
		t.Fatalf("report: %v\n%s", err, o.String())
	}
}

// TestLeaksEBPFBombLibc: a process runs its own copy of the C library
// (LD_LIBRARY_PATH) that carries a .symtab of 1,500 entries all naming
// one 1 MiB string: leaks --ebpf probes its exported functions without
// expanding the bomb (before: 1.6 GB of names).
func TestLeaksEBPFBombLibc(t *testing.T) {
	needBPF(t)
	_, libc := libcCopy(t)
	dir := t.TempDir()
	_, prog := holdLib(t, dir)
	bomb, err := elfsymtest.Patch(libc, 1500, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "libc.so.6")
	if err := os.WriteFile(copyPath, bomb, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prog)
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir)
	w := startPipe(t, cmd)
	if !w.out.Scan() || w.out.Text() != "ready" {
		t.Fatalf("holder said %q", w.out.Text())
	}
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(w.cmd.Process.Pid) + "/maps")
	if err != nil || !strings.Contains(string(maps), copyPath) {
		t.Fatalf("the holder does not map %s: %v", copyPath, err)
	}
	_, errOut, code, took, rss, hung, term := runLeaksProcess(t, 30*time.Second, strconv.Itoa(w.cmd.Process.Pid), "--ebpf", "--duration", "2s", "--json")
	t.Logf("leaks --ebpf on the bomb ran %v, peak RSS %d MiB", took.Round(time.Millisecond), rss>>20)
	if hung {
		t.Fatalf("leaks --ebpf did not end in 30 s; after SIGTERM it ended in %.1f s (-1: not within 5 s)\n%s", term, errOut)
	}
	if code != 0 {
		t.Fatalf("leaks --ebpf exited %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "malloc") {
		t.Errorf("no probe of malloc in the estimate: %s", errOut)
	}
	if rss > 400<<20 {
		t.Errorf("leaks --ebpf peaked at %d MiB", rss>>20)
	}
}

// TestMallocBombLibc: malloc PID on a process whose C library (its own
// copy, by LD_LIBRARY_PATH) carries a symbol-table bomb: 1,500 entries
// naming one 1 MiB string. In .symtab, which malloc does not need, it
// changes nothing; in the .dynsym that the section headers name (the
// dynamic linker binds through the dynamic segment, untouched), malloc
// refuses the library at once with a message saying why, instead of
// expanding the names (before: 1.6 GB).
func TestMallocBombLibc(t *testing.T) {
	requireLinuxRoot(t)
	_, libc := libcCopy(t)
	for _, c := range []string{"symtab", "dynsym"} {
		t.Run(c, func(t *testing.T) {
			dir := t.TempDir()
			_, prog := holdLib(t, dir)
			bomb, err := elfsymtest.Patch(libc, 1500, 1<<20)
			if err == nil && c == "dynsym" {
				bomb, err = elfsymtest.PatchDynamic(bomb, 1500, 1<<20)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "libc.so.6"), bomb, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(prog)
			cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir)
			w := startPipe(t, cmd)
			if !w.out.Scan() || w.out.Text() != "ready" {
				t.Fatalf("holder said %q", w.out.Text())
			}
			mc := exec.Command(binary(t), "malloc", strconv.Itoa(w.cmd.Process.Pid), "--json")
			var o, e bytes.Buffer
			mc.Stdout, mc.Stderr = &o, &e
			start := time.Now()
			err = mc.Run()
			took := time.Since(start)
			rss := mc.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			t.Logf("malloc on the %s bomb: %v, peak RSS %d MiB, %v %s", c, took.Round(time.Millisecond), rss>>20, err, e.String())
			switch {
			case c == "symtab" && (err != nil || !strings.Contains(o.String(), "arenas")):
				t.Errorf("malloc: %v\n%s%s", err, o.String(), e.String())
			case c == "dynsym" && (err == nil || !strings.Contains(e.String(), "symbol table exceeds what memdoctor reads")):
				t.Errorf("malloc on a .dynsym bomb: %v\n%s", err, e.String())
			}
			if rss > 400<<20 {
				t.Errorf("malloc peaked at %d MiB", rss>>20)
			}
			if took > 20*time.Second {
				t.Errorf("malloc took %v", took)
			}
		})
	}
}

// TestLeaksEBPFSignal: SIGTERM while leaks --ebpf samples ends the trace
// early and still writes its report, within a few seconds.
func TestLeaksEBPFSignal(t *testing.T) {
	needBPF(t)
	_, prog := holdLib(t, t.TempDir())
	w := startPipe(t, exec.Command(prog))
	if !w.out.Scan() || w.out.Text() != "ready" {
		t.Fatalf("holder said %q", w.out.Text())
	}
	cmd, o, e, ended := startLeaksBinary(t, w.cmd.Process.Pid, "--duration", "60s", "--json")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatalf("leaks --ebpf did not end within 10 s of SIGTERM: %s", e)
	}
	t.Logf("leaks --ebpf ended %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	var rep heapprof.Report
	if code := cmd.ProcessState.ExitCode(); code != 0 || json.Unmarshal(o.Bytes(), &rep) != nil || rep.Source != "ebpf" {
		t.Fatalf("exit %d, report %q: %s", cmd.ProcessState.ExitCode(), o.String(), e)
	}
}

// startLeaksBinary runs the binary's `leaks PID --ebpf ARGS...` (a process
// of its own, so that it can be signalled) and waits until sampling has
// started; ended is closed when it has exited. It is killed at the end of
// the test.
func startLeaksBinary(t *testing.T, pid int, args ...string) (cmd *exec.Cmd, out *bytes.Buffer, e *startedWriter, ended chan struct{}) {
	t.Helper()
	cmd = exec.Command(binary(t), append([]string{"leaks", strconv.Itoa(pid), "--ebpf"}, args...)...)
	out = &bytes.Buffer{}
	e = &startedWriter{started: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended = make(chan struct{})
	go func() { _ = cmd.Wait(); close(ended) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-ended })
	select {
	case <-e.started:
	case <-ended:
		t.Fatalf("leaks --ebpf ended before sampling: %s", e)
	case <-time.After(60 * time.Second):
		t.Fatalf("leaks --ebpf did not start sampling in 60 s: %s", e)
	}
	return cmd, out, e, ended
}
