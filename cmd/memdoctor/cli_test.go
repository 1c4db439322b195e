package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
)

// runCLI runs memdoctor in-process.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// checkJSON runs `check --json` with extra args and decodes the report.
func checkJSON(t *testing.T, args ...string) *model.Report {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"check", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("check exited %d: %s", code, errOut)
	}
	var r model.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	return &r
}

func finding(r *model.Report, id string) *model.Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

func evidence(f *model.Finding, name string) (float64, bool) {
	for _, e := range f.Evidence {
		if e.Name == name {
			return e.Value, true
		}
	}
	return 0, false
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// waitingParallel is how many tests marked t.Parallel run at once when
// -parallel is not given. Those tests mostly wait (on programs they
// started, recorders sampling, timeouts), so more of them than CPUs
// (go test's default) share the CPUs without crowding one another; the
// tests that burn CPU or judge timing stay serial.
const waitingParallel = 8

// TestMain runs up to waitingParallel tests in parallel unless -parallel
// says otherwise, and removes the programs the tests built once they are
// done.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(waitingParallel))
	}
	code := m.Run()
	if binPath != "" && binErr == nil {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	removeBuilt()
	os.Exit(code)
}

// binary builds memdoctor once per test run, for tests that need a separate
// process (another user, a killed process).
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memdoctor-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "memdoctor")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("building memdoctor: %v\n%s", binErr, binPath)
	}
	return binPath
}

func requireLinuxRoot(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (run the tests as root, as CI does)")
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// skipShort leaves the slowest tests (recordings of several minutes of
// data, fleets, browsers, floods) to the full run: `make test-short` is
// the inner loop, `make test` decides.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow (recordings, browser or flood): run without -short (make test)")
	}
}
