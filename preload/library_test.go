package preload

// The library and Ask against each other: a real process with the library
// built from src/, asked through Ask as memdoctor does (its pid, its root
// or working directory), and the library's own checks.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startLibrary runs alloc_workload with the library and env in dir and
// returns its pid once it is ready.
func startLibrary(t *testing.T, dir string, env ...string) int {
	t.Helper()
	cc := needCC(t)
	lib, err := Build(context.Background(), BuildOptions{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(buildWorkload(t, cc, dir), "hoard", "2", "8", "2")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LD_PRELOAD="+lib), env...)
	startReady(t, cmd)
	return cmd.Process.Pid
}

// buildWorkload builds testdata/programs/alloc_workload.c into dir.
func buildWorkload(t *testing.T, cc, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "alloc_workload")
	if _, err := os.Stat(bin); err != nil {
		src, _ := filepath.Abs("../testdata/programs/alloc_workload.c")
		if out, err := exec.Command(cc, "-O2", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("building alloc_workload: %v\n%s", err, out)
		}
	}
	return bin
}

// Ask as memdoctor does: by pid, with a relative MEMDOCTOR_STATS resolved
// in the process' working directory; a path that climbs out of it is
// refused; with and without openat2.
func TestAskByPID(t *testing.T) {
	dir := t.TempDir()
	pid := startLibrary(t, dir, "MEMDOCTOR_STATS=stats.jsonl")
	for _, noOpenat2 := range []bool{false, true} {
		forceNoOpenat2 = noOpenat2
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := Ask(ctx, Target{PID: pid, OwnPID: pid, StatsPath: "stats.jsonl", Owners: []uint32{uint32(os.Geteuid())}}, "info")
		cancel()
		if err != nil {
			t.Fatalf("without openat2 %v: %v", noOpenat2, err)
		}
		if res.Event.Event != "info" || res.Event.Arenas < 2 || !strings.Contains(string(res.XML), "<heap nr=") {
			t.Errorf("without openat2 %v: %+v", noOpenat2, res.Event)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		_, err = Ask(ctx, Target{PID: pid, StatsPath: "../" + filepath.Base(dir) + "/stats.jsonl"}, "info")
		cancel()
		if !errors.Is(err, ErrUnsafe) {
			t.Errorf("without openat2 %v: a path out of the working directory: %v", noOpenat2, err)
		}
	}
	forceNoOpenat2 = false
	// The answer must come from the process asked.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Ask(ctx, Target{PID: pid, OwnPID: pid + 1, StatsPath: "stats.jsonl"}, "info"); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "%p") {
		t.Errorf("answer from another pid: %v", err)
	}
}

// Symlinks: followed in the directory path with openat2 (inside the
// process' root, as its user), refused without it; never for the files.
func TestAskSymlinks(t *testing.T) {
	dir := t.TempDir()
	realDir := filepath.Join(dir, "real")
	if err := os.Mkdir(realDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	stats := filepath.Join(dir, "link", "stats.jsonl")
	pid := startLibrary(t, dir, "MEMDOCTOR_STATS="+stats)
	ask := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := Ask(ctx, Target{PID: pid, StatsPath: stats}, "info")
		return err
	}
	if err := ask(); err != nil {
		t.Errorf("directory reached through a symlink, with openat2: %v", err)
	}
	forceNoOpenat2 = true
	err := ask()
	forceNoOpenat2 = false
	if !errors.Is(err, ErrUnsafe) {
		t.Errorf("without openat2: %v, want a refusal", err)
	}
	// A symlink in place of the dump (put there by the process' user) is
	// not followed when it is read.
	if err := os.Remove(filepath.Join(realDir, "stats.jsonl.malloc_info.xml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(realDir, "stats.jsonl.malloc_info.xml")); err != nil {
		t.Fatal(err)
	}
	if b, err := readChecked(mustOpenDir(t, realDir), "stats.jsonl.malloc_info.xml", nil, false, MaxXML, false, nil); !errors.Is(err, ErrUnsafe) {
		t.Errorf("symlinked dump: %d bytes, %v", len(b), err)
	}
}

func mustOpenDir(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// A request file of another user (in a directory anyone may write) is not
// a request: the library answers with an error line and neither writes a
// dump nor trims.
func TestLibraryIgnoresForeignRequest(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the other user is uid 65534")
	}
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	for d, mode := range map[string]os.FileMode{filepath.Dir(dir): 0o755, dir: 0o755, shared: 0o777 | os.ModeSticky} {
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	stats := filepath.Join(shared, "stats.jsonl")
	startLibrary(t, dir, "MEMDOCTOR_STATS="+stats)
	// The other user writes "trim x" as a request, by its own hand.
	w := exec.Command("/bin/sh", "-c", `echo "trim other-user" > "$1.request"`, "sh", stats)
	w.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("writing the request as uid 65534: %v\n%s", err, out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Lstat(stats + ".request"); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the library did not take the request file")
		}
		time.Sleep(50 * time.Millisecond)
	}
	f, err := os.Open(stats)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	evs, err := ReadEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	var sawError bool
	for _, e := range evs {
		if e.Event == "trim" || e.Event == "info" || e.Request == "other-user" {
			t.Errorf("the library acted on another user's request: %+v", e)
		}
		if e.Event == "error" && strings.Contains(e.Error, "owned by uid 65534") {
			sawError = true
		}
	}
	if !sawError {
		t.Errorf("no error line about the foreign request in %+v", evs)
	}
	if _, err := os.Lstat(stats + ".malloc_info.xml"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dump was written: %v", err)
	}
}

// MEMDOCTOR_TRIM_FREED below 4 MiB is raised to 4 MiB, said on stderr and
// in the start line; 4 MiB itself is taken as given.
func TestLibraryTrimFreedMinimum(t *testing.T) {
	needCC(t)
	dir := t.TempDir()
	lib, err := Build(context.Background(), BuildOptions{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		value       string
		want, asked uint64
		msg         string
	}{
		{"1KiB", 4 << 20, 1024, `memdoctor-preload: MEMDOCTOR_TRIM_FREED="1KiB": below the minimum of 4MiB (each trim walks every arena); using 4MiB`},
		{"4095KiB", 4 << 20, 4095 << 10, "below the minimum"},
		{"4MiB", 4 << 20, 0, ""},
		{"1GiB", 1 << 30, 0, ""},
	} {
		stats := filepath.Join(dir, c.value+".jsonl")
		cmd := exec.Command("/bin/true")
		cmd.Env = []string{"LD_PRELOAD=" + lib, "MEMDOCTOR_TRIM_FREED=" + c.value, "MEMDOCTOR_STATS=" + stats}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v", c.value, err)
		}
		f, err := os.Open(stats)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := ReadEvents(f)
		_ = f.Close()
		if err != nil || len(evs) == 0 || evs[0].Config == nil {
			t.Fatalf("%s: %v %+v", c.value, err, evs)
		}
		cfg := evs[0].Config
		if cfg.TrimFreedBytes != c.want || cfg.TrimFreedAskedBytes != c.asked {
			t.Errorf("%s: config %+v, want trimFreedBytes %d, trimFreedAskedBytes %d", c.value, *cfg, c.want, c.asked)
		}
		if got := strings.TrimSpace(stderr.String()); c.msg == "" && got != "" || c.msg != "" && !strings.Contains(got, c.msg) {
			t.Errorf("%s: stderr %q, want %q", c.value, got, c.msg)
		}
	}
}

// With MEMDOCTOR_TRIM_FREED=1KiB a threaded program that frees steadily
// trimmed thousands of times a second (alloc_workload hoard 2 64 4: 71 s
// instead of 0.7 s). Raised to the minimum, it stays within a small factor (bounded generously: a shared machine is noisy).
func TestLibraryTinyTrimFreedStaysCheap(t *testing.T) {
	cc := needCC(t)
	dir := t.TempDir()
	lib, err := Build(context.Background(), BuildOptions{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	bin := buildWorkload(t, cc, dir)
	run := func(env ...string) time.Duration {
		cmd := exec.Command(bin, "hoard", "2", "64", "4")
		cmd.Env = env
		cmd.Stdin = strings.NewReader("exit\n")
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: %v after %s", env, err, time.Since(start))
		}
		return time.Since(start)
	}
	plain := run()
	tiny := run("LD_PRELOAD="+lib, "MEMDOCTOR_TRIM_FREED=1KiB")
	t.Logf("without the library %s, MEMDOCTOR_TRIM_FREED=1KiB %s", plain.Round(time.Millisecond), tiny.Round(time.Millisecond))
	if tiny > 10*plain+3*time.Second {
		t.Errorf("MEMDOCTOR_TRIM_FREED=1KiB took %s, without the library %s", tiny, plain)
	}
}
