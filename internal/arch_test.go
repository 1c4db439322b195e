package internal_test

// The package direction of the architecture, checked on every test run (the
// golangci-lint depguard rules say the same for editors; ARCHITECTURE.md
// draws it, from the same imports):
//
//	safeio <- procfs, cgroups (the owners of the kernel's files) <- collect -> sample <- store/source
//	sample, vmcalc, format, stats <- model (the host model: schema and builder) <- diagnose (one file a rule)
//	diagnose <- fleet, alerts, render/text, render/html
//	usecase/live, usecase/history, usecase/prometheus, usecase/leaks (the use cases) <- cmd/memdoctor (flags, wiring: at most cmdImports packages)
//
// Every package under internal/ is listed with the internal packages (and
// the module's preload package) it may import, and with no other: a
// package missing from the list, a listed package that no longer exists,
// an import not allowed and an allowance no import uses all fail, so the
// map is the code's arrows. Adding an import is a decision: make it here,
// with the reason when it is not obvious.

import (
	"errors"
	"go/build"
	"io/fs"
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
	"outfile": nil,
	"safeio":  nil,
	// A target's ELF symbol tables, read within bounds.
	"elfsym":   nil,
	"redact":   nil,
	"termsafe": nil,
	"httpsafe": {"redact"},
	// Small shared helpers.
	"stats": nil,
	// JSON as encoding/json writes it, without its first-use cost.
	"jsonenc": nil,
	// The one set of formats for people (bytes, durations, values in
	// their units) every floor may use.
	"format": nil,
	"promql": nil,
	"vmcalc": nil,
	"sample": nil,
	// The store's export writes its Parquet files with it.
	"parquet": nil,
	// Parsers are leaves: they return their own types.
	"procfs": {"safeio"},
	// The series of a Prometheus text or OpenMetrics line, for the files
	// source ingests and the pages runtimes scrapes.
	"exposition": {"procfs", "sample"},
	// Every cgroup read: the mounts, one memory cgroup's files, the
	// hierarchy's counts and walks, proc/PID/cgroup, which cgroups to read,
	// and who a cgroup path belongs to (its names from the runtimes' state,
	// read with safeio).
	"cgroups": {"cgroups/owner", "procfs", "safeio"},
	// Who a cgroup belongs to: the one type cgroups fills and the report's
	// schema carries (a leaf: the schema never reads the host).
	"cgroups/owner": nil,
	// A .NET process' GC through its diagnostics socket (found with safeio;
	// the process' status, environment and stat read with procfs).
	"dotnet": {"procfs", "safeio"},
	// Collection reads this host and turns it into samples.
	"runtimes": {"dotnet", "elfsym", "exposition", "httpsafe", "procfs", "redact", "safeio", "sample"},
	"collect":  {"cgroups", "heapprof", "inject", "procfs", "runtimes", "sample", "preload"},
	"capture":  {"outfile", "safeio"},
	"inject":   {"elfsym", "procfs", "safeio"},
	// Writes memory.reclaim (with --apply only); reads the tree through
	// cgroups (mounts, cgroup.stat, memory.stat) and procfs.
	"cgreclaim": {"cgroups", "procfs"},
	"malloc":    {"inject", "procfs", "preload"},
	// The page scan reads /proc/kpagecgroup (live only, like inject) and
	// the memory hierarchy through cgroups: its results are samples.
	"pagescan": {"cgroups", "procfs", "sample"},
	// The cgroup tracer loads BPF (or reads tracefs) on the live host; it
	// names cgroups through cgroups (the mount, the walk by inode).
	"cgtrace": {"cgroups", "procfs", "sample"},
	// preload imports nothing of the module: the library's name comes from it.
	"heapprof": {"elfsym", "procfs", "preload", "safeio"},
	// Heap sampling with uprobes on a live process (leaks --ebpf): its
	// result is heapprof's dump; inject opens the target's mapped files.
	"leaktrace": {"elfsym", "heapprof", "inject", "procfs", "safeio"},
	// Storage and sources of samples.
	"store":     {"parquet", "procfs", "sample", "store/xor"}, // procfs: who holds the lock (/proc/locks); parquet: the export
	"store/xor": nil,                                          // the chunks' encoding
	"source":    {"capture", "collect", "exposition", "procfs", "safeio", "sample", "store"},
	"record":    {"cgroups", "cgtrace", "collect", "format", "model", "procfs", "runtimes", "sample", "store"},
	// The stable JSON schema (check --json): data only, no judging.
	"model": {"cgroups/owner", "format", "sample", "stats", "vmcalc"},
	// Judging works on samples only: never /proc.
	"diagnose": {"format", "model", "promql", "sample", "stats"},
	// render/text writes every command's human output, over the types the
	// data packages return (they never import it): check, diagnose, fleet
	// scans, comparisons, malloc/trim/reclaim, leaks, lint, probe, and the
	// stderr lines.
	"render/text": {"compare", "diagnose", "fleet", "format", "heapprof", "jsonenc", "lint", "malloc", "model", "probe", "rightsize", "termsafe", "treat"},
	"render/html": {"diagnose", "format", "model", "sample"},
	"lint":        {"model", "safeio", "termsafe"},
	// Probing a live service measures it from outside.
	"probe": {"httpsafe", "outfile", "procfs", "redact", "safeio", "stats"},
	// Fleets read Prometheus, never this host.
	"prom":    {"httpsafe", "redact", "safeio"},
	"fleet":   {"diagnose", "model", "prom", "promql", "sample"},
	"alerts":  {"diagnose", "model"},
	"compare": {"format", "prom", "promql", "sample", "stats"},

	// Right-sizing judges a container's charge by mechanism (the model's
	// split): data in, recommendations out.
	"rightsize": {"format", "model", "sample", "stats"},

	// The use cases, one slice each: what commands call (cmd/memdoctor
	// parses flags and renders). None imports more than a third of the
	// module's other packages.
	// This host now (or --root, --capture): check, its focus, culprits and
	// runtimes, and capture.
	"usecase/live": {"capture", "cgroups", "cgtrace", "collect", "diagnose", "format", "model", "pagescan", "procfs", "runtimes", "safeio", "sample", "treat"},
	// One process' heap profile (leaks): the profilers stay out of live.
	"usecase/leaks": {"heapprof", "leaktrace", "malloc", "outfile"},
	// Saved history: open, windows and steps, diagnose, merge, report
	// pages, compare, export.
	"usecase/history": {"compare", "diagnose", "fleet", "format", "model", "outfile", "promql", "render/html", "rightsize", "sample", "source", "store"},
	// A Prometheus server: connect, fleet scans and their pages, compare,
	// baselines, alerts; its windows and pages are history's.
	"usecase/prometheus": {"alerts", "compare", "diagnose", "fleet", "model", "outfile", "prom", "promql", "render/html", "rightsize", "sample", "store", "usecase/history"},
	// Remedies that change the host: a running process' allocator (malloc, trim,
	// check --malloc) and dying cgroups (reclaim).
	"treat": {"cgreclaim", "malloc", "procfs", "sample", "termsafe"},
	// Test support: imported by tests (and bench tools) only, never by the
	// binary (TestBinaryHasNoTestCode). Its names end in "test".
	"elfsym/elfsymtest":      nil, // ELF symbol-table bombs
	"fleettest":              {"model", "sample"},
	"incidenttest":           {"capture"},
	"seriestest":             {"promql", "sample"},
	"storetest":              nil,         // a store file damaged for its checks
	"parquettest":            nil,         // Parquet files read with pyarrow
	"unitsandboxtest":        nil,         // a unit file's sandbox, reproduced for a test
	"preloadattacktest":      {"preload"}, // a shared object named like the library
	"redirecttest":           nil,
	"workloadtest":           nil, // programs that tests build and run
	"workloadtest/goservice": nil,
}

func TestPackageDirection(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || path == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
			return filepath.SkipDir
		}
		pkg := filepath.ToSlash(path) // nested packages by their path: render/text
		bp, err := build.ImportDir(path, 0)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				if _, listed := allowed[pkg]; listed {
					seen[pkg] = true // a directory of programs (workloadtest)
				}
				return nil
			}
			t.Fatalf("%s: %v", pkg, err)
		}
		seen[pkg] = true
		allow, listed := allowed[pkg]
		if !listed {
			t.Errorf("internal/%s is not in arch_test.go's map: say what it may import", pkg)
			return nil
		}
		imports := slices.Clone(bp.Imports)
		// What another system's files import counts too (a stub for macOS).
		other := build.Default
		other.GOOS, other.GOARCH = "darwin", "arm64"
		if ob, err := other.ImportDir(path, 0); err == nil {
			imports = append(imports, ob.Imports...)
		}
		used := map[string]bool{}
		for _, imp := range imports {
			rest, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			target := strings.TrimPrefix(rest, "internal/")
			used[target] = true
			if !slices.Contains(allow, target) {
				t.Errorf("internal/%s imports %s, which arch_test.go does not allow it (the package direction)", pkg, rest)
			}
		}
		// The map is the code's arrows, no more: an allowance nothing uses
		// is a decision nobody made.
		for _, a := range allow {
			if !used[a] {
				t.Errorf("arch_test.go allows internal/%s to import %s, which it does not: remove it from the map", pkg, a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("arch_test.go lists internal/%s, which does not exist: remove it", pkg)
		}
	}
}

// TestPreloadIsALeaf: the module's preload package (the library's sources,
// name and protocol) imports nothing of the module, so every layer that
// meets the library (collect, heapprof, malloc) may take its name and its
// decoder from it.
func TestPreloadIsALeaf(t *testing.T) {
	t.Parallel()
	bp, err := build.ImportDir(filepath.Join("..", "preload"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(bp.GoFiles, "embed.go") {
		t.Fatalf("../preload holds no embed.go: %v", bp.GoFiles)
	}
	for _, imp := range bp.Imports {
		if strings.HasPrefix(imp, module) {
			t.Errorf("preload imports %s: it must stay a leaf of the module", imp)
		}
	}
}

// cmdImports is the most internal packages cmd/memdoctor may import. The
// command files parse flags and render; what a command does lives behind
// a few packages: the use cases under usecase/ (live, history, prometheus,
// leaks), treat (remedies on a process' allocator), render/text (text, and
// every line on stderr), and the self-contained lint, probe and record. A
// command that needs a tenth package puts its logic in one of these instead.
const cmdImports = 9

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
		t.Errorf("cmd/memdoctor imports %d internal packages, at most %d allowed: %s\n(move the logic behind a use case of internal/usecase, treat or render/text; the command files keep flags and wiring)",
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

// TestBinaryLeavesOutHeavyDependencies: packages whose initialisers every
// command paid for, linked for one flag or one command, and replaced by
// code of our own (docs/cost.md). Prometheus' PromQL parser stays in the
// selector reader's test, to hold the reader to it.
func TestBinaryLeavesOutHeavyDependencies(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "../cmd/memdoctor").Output()
	if err != nil {
		t.Fatalf("go list -deps ../cmd/memdoctor: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"internal/promql") {
		t.Fatalf("go list -deps ../cmd/memdoctor lists no internal/promql: %q", deps)
	}
	for _, dep := range deps {
		for _, heavy := range []string{
			"github.com/prometheus/prometheus/promql",  // --match: internal/promql reads selectors
			"github.com/prometheus/prometheus/storage", // the parser's
			"github.com/prometheus/exporter-toolkit",   // --web.config.file: internal/record/webconfig.go
			"github.com/prometheus/client_golang",      // the toolkit's and the parser's default registry
			"github.com/prometheus/procfs",             // client_golang's process collector
			"fortio.org/",                              // probe: internal/probe/run.go paces its own load
			"github.com/parquet-go/parquet-go",         // the store's export: internal/parquet writes the file
			// The protobuf runtime's descriptor registration, and what
			// brought it in:
			"github.com/prometheus/prometheus/tsdb",  // chunkenc: internal/store/xor writes the same chunks
			"github.com/prometheus/prometheus/model", // labels, histogram: internal/promql's own matcher
			"github.com/prometheus/common/expfmt",    // runtimes.ParsePage reads scraped pages
			"github.com/prometheus/common/model",     // prom.Labels and prom.Point; promql reads durations
			"github.com/prometheus/client_model",     // expfmt's metric families
			"google.golang.org/protobuf",             // descriptors registered before every command
		} {
			if dep == heavy || strings.HasPrefix(dep, strings.TrimSuffix(heavy, "/")+"/") {
				t.Errorf("memdoctor links %s again: its initialisers run before every command (see docs/cost.md)", dep)
			}
		}
	}
}
