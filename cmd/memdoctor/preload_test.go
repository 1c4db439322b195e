package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runPreload runs the preload command on its own: it does not depend on
// main.go registering it.
func runPreload(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := newPreloadCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&o)
	cmd.SetErr(&e)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err = cmd.ExecuteContext(context.Background())
	return o.String(), e.String(), err
}

// The C tests of the library (preload/test/run.sh) run with the Go tests.
func TestPreloadCTests(t *testing.T) {
	for _, tool := range []string{"gcc", "make", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install gcc make python3)", tool)
		}
	}
	if testing.Short() {
		t.Skip("-short: the C tests take about 30 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", filepath.Join(repoRoot(t), "preload"), "test")
	out, err := cmd.CombinedOutput()
	t.Logf("make -C preload test:\n%s", out)
	if err != nil {
		t.Fatalf("make -C preload test: %v", err)
	}
}

func TestPreloadPrintPath(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	cache := t.TempDir()
	out, _, err := runPreload(t, "--print-path", "--cache-dir", cache)
	if err != nil {
		t.Fatal(err)
	}
	lib := strings.TrimSuffix(out, "\n")
	if strings.Contains(lib, "\n") || !strings.HasPrefix(lib, cache) || filepath.Base(lib) != "libmemdoctor_preload.so" {
		t.Fatalf("--print-path printed %q, want one path under %s", out, cache)
	}
	again, _, err := runPreload(t, "--print-path", "--cache-dir", cache)
	if err != nil || again != out {
		t.Errorf("second run: %q, %v; want the cached %q", again, err, out)
	}

	// The library loads into a program and reports a bad value once.
	sh := exec.Command("/bin/sh", "-c", "echo hello")
	sh.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMDOCTOR_TRIM_INTERVAL=soon")
	var so, se bytes.Buffer
	sh.Stdout, sh.Stderr = &so, &se
	if err := sh.Run(); err != nil {
		t.Fatalf("sh with the library: %v: %s", err, se.String())
	}
	if so.String() != "hello\n" || !strings.HasPrefix(se.String(), "memdoctor-preload: MEMDOCTOR_TRIM_INTERVAL=\"soon\"") ||
		strings.Count(se.String(), "\n") != 1 {
		t.Errorf("stdout %q, stderr %q", so.String(), se.String())
	}

	usage, _, err := runPreload(t, "--cache-dir", cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{lib, "LD_PRELOAD=" + lib, "MEMDOCTOR_TRIM_INTERVAL=30s", "MEMDOCTOR_TRIM_FREED=1GiB",
		"MEMDOCTOR_STATS=/tmp/trim.%p.jsonl", "MEMDOCTOR_STATS_INTERVAL", "PATH.request"} {
		if !strings.Contains(usage, want) {
			t.Errorf("usage lacks %q:\n%s", want, usage)
		}
	}
}

func TestPreloadNoCompiler(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CC", "")
	out, _, err := runPreload(t, "--print-path", "--cache-dir", t.TempDir())
	if err == nil {
		t.Fatalf("no compiler, yet printed %q", out)
	}
	if out != "" || !strings.Contains(err.Error(), "no C compiler found") || !strings.Contains(err.Error(), "apt-get install gcc") {
		t.Errorf("stdout %q, err %v; want nothing on stdout and a hint to install gcc", out, err)
	}
}
