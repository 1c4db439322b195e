package collect

// CONTRIBUTING.md's "Add a collector", step by step: each collector is one
// file named after it that registers it from init, documented in
// docs/metrics.md's table of collectors, seen at work on a real capture,
// and saying so (never a 0) when it has nothing to read.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// registration is one register(order, name, required, fn) call in a
// source file.
type registration struct {
	file, name, fn string
	order          int
	required       bool
}

// sourceRegistrations reads every register call of the package's non-test
// files, failing on one outside init or with arguments that are not
// literals and a function name.
func sourceRegistrations(t *testing.T) []registration {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []registration
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		funcs := map[string]bool{}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = true
			}
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "register" {
					return true
				}
				pos := fset.Position(call.Pos())
				if fd.Name.Name != "init" || fd.Recv != nil {
					t.Errorf("%s: register outside init (in %s): a collector registers itself from its file's init", pos, fd.Name.Name)
					return true
				}
				if len(call.Args) < 4 {
					t.Errorf("%s: register takes (order, name, required, fn, options...)", pos)
					return true
				}
				for _, o := range call.Args[4:] {
					switch o := o.(type) {
					case *ast.Ident:
						if o.Name != "concurrently" {
							t.Errorf("%s: register's option %s is not concurrently or prefetching(fn)", pos, o.Name)
						}
					case *ast.CallExpr:
						id, ok := o.Fun.(*ast.Ident)
						arg, ok2 := (ast.Expr)(nil), len(o.Args) == 1
						if ok2 {
							arg = o.Args[0]
						}
						fn, ok3 := arg.(*ast.Ident)
						if !ok || id.Name != "prefetching" || !ok2 || !ok3 || !funcs[fn.Name] {
							t.Errorf("%s: register's options are concurrently and prefetching(fn), fn declared in %s", pos, f)
						}
					default:
						t.Errorf("%s: register's options are concurrently and prefetching(fn)", pos)
					}
				}
				order, ok1 := call.Args[0].(*ast.BasicLit)
				name, ok2 := call.Args[1].(*ast.BasicLit)
				req, ok3 := call.Args[2].(*ast.Ident)
				fn, ok4 := call.Args[3].(*ast.Ident)
				if !ok1 || !ok2 || !ok3 || !ok4 || order.Kind != token.INT || name.Kind != token.STRING {
					t.Errorf("%s: register's order, name and required are literals and its function a name", pos)
					return true
				}
				r := registration{file: f, fn: fn.Name, required: req.Name == "true"}
				r.order, _ = strconv.Atoi(order.Value)
				r.name, _ = strconv.Unquote(name.Value)
				if !funcs[fn.Name] {
					t.Errorf("%s: collector %s runs %s, which is not declared in %s: a collector's code is in its own file", pos, r.name, fn.Name, f)
				}
				out = append(out, r)
				return true
			})
		}
	}
	return out
}

// TestCollectorsOneFileEach: every collector is registered from init in
// internal/collect/<name>.go, once, with its own order, and what runs is
// what the files register, in their order.
func TestCollectorsOneFileEach(t *testing.T) {
	t.Parallel()
	regs := sourceRegistrations(t)
	if len(regs) < 10 {
		t.Fatalf("only %d register calls found in internal/collect", len(regs))
	}
	byName := map[string]registration{}
	byOrder := map[int]string{}
	for _, r := range regs {
		if r.file != r.name+".go" {
			t.Errorf("collector %s is registered in %s: it belongs in its own file, %s.go", r.name, r.file, r.name)
		}
		if o, dup := byName[r.name]; dup {
			t.Errorf("collector %s is registered twice (%s, %s)", r.name, o.file, r.file)
		}
		if n, dup := byOrder[r.order]; dup {
			t.Errorf("collectors %s and %s share order %d", n, r.name, r.order)
		}
		byName[r.name], byOrder[r.order] = r, r.name
	}
	if len(collectors) != len(regs) {
		t.Fatalf("%d collectors run, %d are registered in the files", len(collectors), len(regs))
	}
	for i, c := range collectors {
		r := byName[c.name]
		if r.name == "" || r.required != c.required {
			t.Errorf("collector %d (%s, required %v) is not what the files register", i, c.name, c.required)
		}
		if i > 0 && byName[collectors[i-1].name].order >= r.order {
			t.Errorf("collector %s runs after %s against their orders", c.name, collectors[i-1].name)
		}
	}
	if collectors[0].name != "meminfo" || !collectors[0].required {
		t.Errorf("the first collector is %s: meminfo runs first and is required (without it nothing else matters)", collectors[0].name)
	}
}

// docCollectors reads the table of docs/metrics.md's "## Collectors":
// name, what it reads, required, what the note says when it cannot read.
func docCollectors(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Collectors\n")
	if !ok {
		t.Fatal(`docs/metrics.md has no "## Collectors" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\|(.*)\\|(.*)\\|(.*)\\|$")
	var out [][]string
	for _, l := range strings.Split(sec, "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			out = append(out, []string{m[1], strings.TrimSpace(m[2]), strings.TrimSpace(m[3]), strings.TrimSpace(m[4])})
		}
	}
	return out
}

// TestCollectorsDocumented: docs/metrics.md lists every collector, in the
// order they run, with whether it is required and what its note says when
// it cannot read.
func TestCollectorsDocumented(t *testing.T) {
	t.Parallel()
	rows := docCollectors(t)
	var names []string
	for _, r := range rows {
		names = append(names, r[0])
	}
	var want []string
	for _, c := range collectors {
		want = append(want, c.name)
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("docs/metrics.md's collectors are %v, they run as %v", names, want)
	}
	for i, r := range rows {
		req := map[bool]string{true: "yes", false: "no"}[collectors[i].required]
		if r[2] != req {
			t.Errorf("docs/metrics.md: collector %s required %q, want %q", r[0], r[2], req)
		}
		if r[1] == "" || r[3] == "" {
			t.Errorf("docs/metrics.md: collector %s says not what it reads or what its note says when it cannot", r[0])
		}
	}
}

// runEach runs the collectors as Collect does, returning per collector
// how many series it added and its error.
func runEach(fsys procfs.FS, opt Options) (added []int, errs []error, res *Result) {
	opt.defaults()
	res = &Result{}
	res.Snapshot.Time = opt.Now()
	c := &ctx{fs: fsys, opt: opt, res: res, live: opt.Live, root: os.Geteuid() == 0}
	for _, col := range collectors {
		before := len(res.Snapshot.Metrics)
		errs = append(errs, col.run(c))
		added = append(added, len(res.Snapshot.Metrics)-before)
	}
	return added, errs, res
}

// liveOnly are the collectors no capture can hold, with the tests that
// run them on the real thing instead.
var liveOnly = map[string]string{
	"runtimes": "a capture holds no language runtime's memory: internal/runtimes and cmd/memdoctor run real JVM, .NET, Go and Node processes",
}

// TestCollectorsOnRealCaptures: every collector reads something on at
// least one real capture of testdata/captures (a kernel log saved beside
// a capture is its /dev/kmsg), but for those liveOnly names with the
// tests that run them live.
func TestCollectorsOnRealCaptures(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "captures", "*.txtar"))
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	read := map[string]bool{}
	for _, f := range files {
		fsys, prov, err := capture.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		opt := Options{TopProcesses: 5, TopCgroups: 5, ArenaScan: true}
		if k := strings.TrimSuffix(f, ".txtar") + ".kmsg"; fileExists(k) {
			opt.KmsgPath = k
		}
		added, errs, _ := runEach(pfs, opt)
		for i, col := range collectors {
			if errs[i] == nil && added[i] > 0 {
				read[col.name] = true
			}
		}
	}
	for _, col := range collectors {
		if why, ok := liveOnly[col.name]; ok {
			if read[col.name] {
				t.Errorf("collector %s reads a capture now: drop it from liveOnly (%s)", col.name, why)
			}
			continue
		}
		if !read[col.name] {
			t.Errorf("collector %s reads nothing on any capture of testdata/captures: add a real capture that holds its files (testdata/captures/README.md)", col.name)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestCollectorsSayWhatTheyCannotRead: on a host with none of its files a
// collector adds no series (never a 0 for what it could not read) and says
// so: an error, which Collect notes under its name (or fails on, for a
// required one), or a note of its own.
func TestCollectorsSayWhatTheyCannotRead(t *testing.T) {
	t.Parallel()
	opt := Options{TopProcesses: 5, TopCgroups: 5, ArenaScan: true, KmsgPath: filepath.Join(t.TempDir(), "kmsg")}
	opt.defaults()
	for _, col := range collectors {
		res := &Result{}
		c := &ctx{fs: procfs.NewFSFrom(fstest.MapFS{}, 4096), opt: opt, res: res}
		err := col.run(c)
		if n := len(res.Snapshot.Metrics); n > 0 {
			t.Errorf("collector %s adds %d series with none of its files (first %s)", col.name, n, res.Snapshot.Metrics[0].Name)
		}
		if col.name == "runtimes" {
			continue // no process, no runtime: nothing to read, nothing hidden
		}
		if err == nil && len(res.Notes) == 0 {
			t.Errorf("collector %s reads nothing and says nothing: return the error or add a note (c.note) saying what it hides", col.name)
		}
	}
}
