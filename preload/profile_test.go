package preload

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// runProfsafe runs test/profsafe.c (threads allocating with every
// interposed function, the main thread forking and exec'ing /bin/true,
// SIGALRM every 2 ms, dlopen of libm) and returns its output.
func runProfsafe(t *testing.T, bin string, forks int, env ...string) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "2", strconv.Itoa(forks), "1000000")
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("deadlock: profsafe %v still running after 5 minutes", env)
	}
	if err != nil {
		t.Fatalf("profsafe %v: %v\n%s", env, err, out)
	}
	return string(out), took
}

// With sampling on (every 4 KiB, far more often than in use), a
// multi-threaded program that forks and execs 2,000 times, takes signals
// and dlopens prints exactly what it prints without the library, and never
// hangs. Every child of fork starts its own empty profile.
func TestProfileForkExecSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 2,000 fork+exec take about 30 s")
	}
	cc := needCC(t)
	dir := t.TempDir()
	lib, err := Build(context.Background(), BuildOptions{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "profsafe")
	if out, err := exec.Command(cc, "-O2", "-pthread", "-o", bin, "test/profsafe.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("building profsafe: %v\n%s", err, out)
	}
	const forks = 2000
	want, base := runProfsafe(t, bin, forks)
	dumps := filepath.Join(dir, "dumps")
	if err := os.Mkdir(dumps, 0o755); err != nil {
		t.Fatal(err)
	}
	got, took := runProfsafe(t, bin, forks, "LD_PRELOAD="+lib, "MEMDOCTOR_PROFILE=4KiB",
		"MEMDOCTOR_PROFILE_PATH="+filepath.Join(dumps, "heap.%p"))
	if got != want {
		t.Fatalf("output under the library:\n%s\nwithout:\n%s", got, want)
	}
	// The parent and each exec'd /bin/true write one profile at exit.
	if n, _ := os.ReadDir(dumps); len(n) != forks+1 {
		t.Errorf("%d profiles, want %d (the parent and every exec'd child)", len(n), forks+1)
	}
	t.Logf("%d fork+exec: %s with sampling, %s without the library", forks, took.Round(time.Millisecond), base.Round(time.Millisecond))
}
