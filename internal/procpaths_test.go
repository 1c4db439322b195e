package internal_test

// Two packages own the kernel's files: internal/procfs every /proc path
// (a process' stat, status, environ, maps, mem, its tasks' files, the host's
// files) and internal/cgroups every cgroup file (and /proc/PID/cgroup).
// Everything else asks them. So a package that can open files (it imports
// os, syscall, golang.org/x/sys/unix, io/fs or internal/safeio) and holds a
// string literal naming a /proc path ("/proc", "/proc/...") or a cgroup
// path ("/sys/fs/cgroup...", or a cgroup interface file: memory.*,
// cgroup.*, nr_dying_*) fails here, with the owner to use instead.
//
// A package that cannot open files is not flagged: the rules print remedy
// commands such as `grep VmRSS /proc/PID/status` for a person to run, and
// the catalog describes series by the file they come from; neither reads
// anything. Tests, testdata, test support (packages named ...test), the
// kernel lab, the benchmarks and the scripts are not the binary's code and
// are not checked. A literal holding a blank is a message that names a file
// ("/proc/cgroups has no memory line"), not a path that is opened.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// kernelFileOwners are the packages that open /proc and cgroup files.
// The module's preload package is the library's own protocol and imports
// nothing of the module (TestPreloadIsALeaf): it opens the target's root
// and its own descriptors (/proc/PID/root, /proc/self/fd/N) itself.
var kernelFileOwners = []string{"internal/procfs", "internal/cgroups", "preload"}

// pendingCgroups are the files that still hold cgroup file names or paths
// while their reads move into internal/cgroups. It must be empty: a file
// listed here is a read that bypasses the owner, and the list is emptied
// once those reads have moved. Only cgroup literals are excused by it,
// never /proc ones.
var pendingCgroups = []string{}

// fileOpeners are the imports that let a package open a file.
var fileOpeners = []string{"os", "syscall", "golang.org/x/sys/unix", "io/fs", module + "internal/safeio"}

var (
	// A /proc path is "/proc" or "/proc/...", a format ("/proc/%d/mem")
	// included; a literal with a blank is a message naming a file (an
	// error text), not a path that is opened.
	procPathRE = regexp.MustCompile(`^/proc(/\S*)?$`)
	// A cgroup path, or a cgroup interface file's name on its own (or a
	// prefix of names: "nr_dying_subsys_").
	cgroupPathRE = regexp.MustCompile(`^/sys/fs/cgroup(/\S*)?$|^(memory|cgroup)\.[a-z_.]+$|^nr_dying_\S*$`)
)

func TestKernelPathsHaveOneOwner(t *testing.T) {
	t.Parallel()
	type pkgFiles struct {
		files   []shippedFile
		imports map[string]bool
	}
	pkgs := map[string]*pkgFiles{}
	for _, f := range shippedGoFiles(t, kernelFileOwners...) {
		dir := filepath.ToSlash(filepath.Dir(f.Rel))
		if pkgs[dir] == nil {
			pkgs[dir] = &pkgFiles{imports: map[string]bool{}}
		}
		pkgs[dir].files = append(pkgs[dir].files, f)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages: the walk is wrong", len(pkgs))
	}
	pending := map[string]bool{}
	for _, f := range pendingCgroups {
		pending[f] = true
	}
	stillPending := map[string]bool{}
	checked := 0
	for dir, p := range pkgs {
		parsed := make([]*ast.File, 0, len(p.files))
		rels := map[*ast.File]string{}
		fset := token.NewFileSet()
		for _, sf := range p.files {
			f, err := parser.ParseFile(fset, sf.Path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(f.Name.Name, "_test") {
				continue
			}
			parsed = append(parsed, f)
			rels[f] = sf.Rel
			for _, imp := range f.Imports {
				s, _ := strconv.Unquote(imp.Path.Value)
				p.imports[s] = true
			}
		}
		opens := slices.ContainsFunc(fileOpeners, func(s string) bool { return p.imports[s] })
		if !opens {
			continue
		}
		checked++
		for _, f := range parsed {
			rel := rels[f]
			tags := map[*ast.BasicLit]bool{} // a struct tag is a JSON key, not a path
			ast.Inspect(f, func(n ast.Node) bool {
				if fd, ok := n.(*ast.Field); ok && fd.Tag != nil {
					tags[fd.Tag] = true
				}
				if _, ok := n.(*ast.ImportSpec); ok {
					return false
				}
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || tags[lit] {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					s = lit.Value
				}
				pos := fset.Position(lit.Pos())
				pos.Filename = rel
				switch {
				case procPathRE.MatchString(s):
					t.Errorf("%s: %s names a /proc path in package %s, which opens files: read it through internal/procfs (add a function there when it has none)", pos, lit.Value, dir)
				case cgroupPathRE.MatchString(s) && pending[rel]:
					stillPending[rel] = true
				case cgroupPathRE.MatchString(s):
					t.Errorf("%s: %s names a cgroup file in package %s, which opens files: read it through internal/cgroups", pos, lit.Value, dir)
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages open files: the import check is wrong", checked)
	}
	for _, f := range pendingCgroups {
		if !stillPending[f] {
			t.Errorf("pendingCgroups lists %s, which names no cgroup file (any more): remove it", f)
		}
	}
}
