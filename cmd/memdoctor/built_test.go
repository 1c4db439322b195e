package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Test programs built once per test run and shared by the tests that run
// them (in parallel too): a compiler run per test costs seconds of CPU on
// a loaded machine and proves nothing more. The same goes for data the
// tests only read (sharedFleet's backfilled fleet).
var (
	builtMu   sync.Mutex
	builtRoot string
	builtBy   = map[string]*builtProgram{}
)

type builtProgram struct {
	once sync.Once
	dir  string
	path string // what build returned
	err  error
}

// buildOnce runs build once per test run, the first time a test asks for
// name, in a directory of its own that TestMain removes at the end, and
// returns the path build returned; every later call (from any test)
// returns the same path, or fails with the same error. build writes its
// program into dir; it must not call t.Skip or t.Fatal (what it needs is
// checked before), since its test is not the only one that waits for it.
func buildOnce(t *testing.T, name string, build func(dir string) (string, error)) string {
	t.Helper()
	builtMu.Lock()
	if builtRoot == "" {
		d, err := os.MkdirTemp("", "memdoctor-test-programs-")
		if err != nil {
			builtMu.Unlock()
			t.Fatal(err)
		}
		// Programs run as other users too (nobody, in a sandbox).
		if err := os.Chmod(d, 0o755); err != nil {
			builtMu.Unlock()
			t.Fatal(err)
		}
		builtRoot = d
	}
	b := builtBy[name]
	if b == nil {
		b = &builtProgram{dir: filepath.Join(builtRoot, name)}
		builtBy[name] = b
	}
	builtMu.Unlock()
	b.once.Do(func() {
		if b.err = os.Mkdir(b.dir, 0o755); b.err == nil {
			b.path, b.err = build(b.dir)
		}
	})
	if b.err != nil {
		t.Fatalf("building %s: %v", name, b.err)
	}
	return b.path
}

func removeBuilt() {
	builtMu.Lock()
	defer builtMu.Unlock()
	if builtRoot != "" {
		_ = os.RemoveAll(builtRoot)
	}
}

// gcc compiles src into bin with the given flags (libraries last) and
// returns bin.
func gcc(bin, src string, flags ...string) (string, error) {
	var opts, libs []string
	for _, f := range flags {
		if strings.HasPrefix(f, "-l") {
			libs = append(libs, f)
		} else {
			opts = append(opts, f)
		}
	}
	return bin, runBuild(exec.Command("gcc", append(append(opts, "-o", bin, src), libs...)...))
}

// runBuild runs a compiler; its error carries what the compiler said.
func runBuild(cmd *exec.Cmd) error {
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

// goservice is internal/workloadtest/goservice, built once per test run.
func goservice(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	return buildOnce(t, "goservice", func(dir string) (string, error) {
		bin := filepath.Join(dir, "goservice")
		build := exec.Command("go", "build", "-o", bin, "./internal/workloadtest/goservice")
		build.Dir = root
		return bin, runBuild(build)
	})
}

// TestBuildOnceSharesOneBuild: tests asking for the same program at once
// (parallel ones) wait for one build and get the same file; another name
// is another build.
func TestBuildOnceSharesOneBuild(t *testing.T) {
	var mu sync.Mutex
	builds := map[string]int{}
	build := func(name string) func(string) (string, error) {
		return func(dir string) (string, error) {
			mu.Lock()
			builds[name]++
			mu.Unlock()
			p := filepath.Join(dir, "prog")
			return p, os.WriteFile(p, []byte(name), 0o755)
		}
	}
	paths := make([]string, 6)
	t.Run("callers", func(t *testing.T) {
		for i := range paths {
			name := []string{"once-test-a", "once-test-b"}[i%2]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				paths[i] = buildOnce(t, name, build(name))
			})
		}
	})
	if builds["once-test-a"] != 1 || builds["once-test-b"] != 1 {
		t.Errorf("builds per program: %v, want one each", builds)
	}
	for i := range paths {
		if paths[i] != paths[i%2] {
			t.Errorf("caller %d got %s, caller %d %s: want the same program", i, paths[i], i%2, paths[i%2])
		}
		if b, err := os.ReadFile(paths[i]); err != nil || string(b) != []string{"once-test-a", "once-test-b"}[i%2] {
			t.Errorf("caller %d: %q, %v", i, b, err)
		}
	}
	if paths[0] == paths[1] {
		t.Errorf("two programs built to one path %s", paths[0])
	}
}
