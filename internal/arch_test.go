package internal_test

// The package direction of the architecture, checked on every test run (the
// golangci-lint depguard rules say the same for editors):
//
//	procfs <- collect -> sample <- store/source <- diagnose <- report/htmlreport
//	analysis (the use cases) <- cmd/memdoctor (flags, wiring: at most cmdImports packages)
//
// Every package under internal/ is listed with the internal packages (and
// the module's preload package) it may import; a package missing from the
// list, a listed package that no longer exists and an import not allowed
// all fail, so the map cannot go stale. Adding an import is a decision:
// make it here, with the reason when it is not obvious.

import (
	"errors"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/memdoctor/memdoctor/"

// allowed: what each package may import. Leaves (nil) import nothing of
// the module: trust boundaries and small helpers every layer may use.
var allowed = map[string][]string{
	// Trust boundaries: writing, reading, showing, linking, following.
	"outfile":  nil,
	"safeio":   nil,
	"redact":   nil,
	"termsafe": nil,
	"httpsafe": {"redact"},
	// Small shared helpers.
	"stats":  nil,
	"promql": nil,
	"vmcalc": nil,
	"human":  nil, // the one set of byte and duration formats
	"sample": nil,
	// Parsers are leaves: they return their own types.
	"procfs": {"safeio"},
	// One memory cgroup's files, which cgroups to read, and who a cgroup
	// path belongs to.
	"cgroups": {"procfs"},
	// Collection reads this host and turns it into samples.
	"runtimes": {"httpsafe", "procfs", "redact", "sample"},
	"collect":  {"cgroups", "heapprof", "inject", "procfs", "runtimes", "sample", "preload"},
	"capture":  {"outfile", "safeio"},
	"inject":   {"procfs"},
	// Writes memory.reclaim (with --apply only); reads the tree with procfs.
	"cgreclaim": {"procfs"},
	"malloc":    {"inject", "procfs", "preload"},
	// The page scan reads /proc/kpagecgroup and the memory hierarchy itself
	// (live only, like inject): its results are samples.
	"pagescan": {"sample"},
	// The cgroup tracer loads BPF (or reads tracefs) on the live host.
	"cgtrace":  {"sample"},
	"heapprof": {"procfs"},
	// Storage and sources of samples.
	"store":  {"sample"},
	"source": {"capture", "collect", "procfs", "safeio", "sample", "store"},
	"record": {"cgtrace", "collect", "diagnose", "procfs", "runtimes", "sample", "store"},
	// Judging works on samples only: never /proc.
	"diagnose":   {"human", "promql", "sample", "stats", "vmcalc"},
	"report":     {"compare", "diagnose", "fleet", "human", "termsafe"}, // text of check, diagnose, fleet scans, comparisons
	"htmlreport": {"diagnose", "human", "sample"},
	"lint":       {"diagnose", "safeio", "termsafe"},
	// Probing a live service measures it from outside.
	"probe": {"httpsafe", "outfile", "procfs", "redact", "safeio", "stats", "termsafe"},
	// Fleets read Prometheus, never this host.
	"prom":    {"httpsafe", "safeio"},
	"fleet":   {"diagnose", "prom", "promql", "sample"},
	"alerts":  {"diagnose", "promql"},
	"compare": {"human", "prom", "promql", "sample", "stats"},
	// The use cases: what commands call (cmd/memdoctor parses flags and
	// renders; this opens, resolves windows and steps, diagnoses, merges).
	"analysis": {"alerts", "capture", "cgtrace", "collect", "compare", "diagnose", "fleet", "heapprof", "htmlreport", "human", "malloc", "outfile", "pagescan", "procfs", "termsafe",
		"prom", "promql", "runtimes", "safeio", "sample", "source", "store", "treat"},
	// Remedies that change the host: a running process' allocator (malloc, trim,
	// check --malloc) and dying cgroups (reclaim).
	"treat": {"cgreclaim", "human", "malloc", "procfs", "sample", "termsafe"},
	// Test support: imported by tests (and bench tools) only, never by the
	// binary (TestBinaryHasNoTestCode). Its names end in "test".
	"fleettest":         {"sample"},
	"incidenttest":      {"capture"},
	"seriestest":        {"promql", "sample"},
	"preloadattacktest": nil,
	"redirecttest":      nil,
	"workloadtest":      nil, // programs that tests build and run
}

func TestPackageDirection(t *testing.T) {
	t.Parallel()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" {
			continue
		}
		pkg := e.Name()
		seen[pkg] = true
		allow, listed := allowed[pkg]
		if !listed {
			t.Errorf("internal/%s is not in arch_test.go's map: say what it may import", pkg)
			continue
		}
		bp, err := build.ImportDir(filepath.Join(".", pkg), 0)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				continue // a directory of programs (workloadtest)
			}
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range bp.Imports {
			rest, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			target := strings.TrimPrefix(rest, "internal/")
			target = strings.SplitN(target, "/", 2)[0]
			if !slices.Contains(allow, target) {
				t.Errorf("internal/%s imports %s, which arch_test.go does not allow it (the package direction)", pkg, rest)
			}
		}
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("arch_test.go lists internal/%s, which does not exist: remove it", pkg)
		}
	}
}

// cmdImports is the most internal packages cmd/memdoctor may import. The
// command files parse flags and render; what a command does lives behind
// a few packages: analysis (the use cases over history and this host),
// treat (remedies on a process' allocator), report (text, and every line
// on stderr), and the self-contained lint, probe and record. A command
// that needs a seventh package puts its logic in one of these instead.
const cmdImports = 6

func TestCmdImportsFewPackages(t *testing.T) {
	t.Parallel()
	bp, err := build.ImportDir(filepath.Join("..", "cmd", "memdoctor"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var internal []string
	for _, imp := range bp.Imports {
		if strings.HasPrefix(imp, module+"internal/") {
			internal = append(internal, strings.TrimPrefix(imp, module))
		}
	}
	if len(internal) == 0 {
		t.Fatalf("cmd/memdoctor imports no internal package: %v", bp.Imports)
	}
	if len(internal) > cmdImports {
		t.Errorf("cmd/memdoctor imports %d internal packages, at most %d allowed: %s\n(move the logic behind internal/analysis, treat or report; the command files keep flags and wiring)",
			len(internal), cmdImports, strings.Join(internal, ", "))
	}
}

// TestBinaryHasNoTestCode: what memdoctor ships holds no test support. Test
// generators and helpers live in packages whose names end in "test" (or in
// _test.go files), so the binary's dependencies hold none of the module's
// such packages and no package of the standard library's testing tree.
func TestBinaryHasNoTestCode(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "../cmd/memdoctor").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -deps ../cmd/memdoctor: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps ../cmd/memdoctor: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"internal/diagnose") {
		t.Fatalf("go list -deps ../cmd/memdoctor lists no internal/diagnose: %q", deps)
	}
	for _, dep := range deps {
		switch {
		case strings.HasPrefix(dep, module) && strings.HasSuffix(dep, "test"):
			t.Errorf("memdoctor depends on %s: test support must stay out of the binary", dep)
		case dep == "testing" || strings.HasPrefix(dep, "testing/"):
			t.Errorf("memdoctor depends on the standard library's %s: test support must stay out of the binary", dep)
		}
	}
}
