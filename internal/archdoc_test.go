package internal_test

// ARCHITECTURE.md draws the house: every production package on its floor,
// with the packages of the module it imports. The table between its
// markers is the code's own import graph, measured here; when a package,
// a floor or an arrow changes, this test fails until the table is written
// again with
//
//	go test ./internal -run TestArchitectureDoc -update
//
// so the page cannot drift from the code. The same test fails when an
// arrow runs back up (an import of a package on a higher floor cannot
// happen in an acyclic graph, so it checks the floors' computation) and
// when one package imports more than a third of the others.

import (
	"errors"
	"flag"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateArch = flag.Bool("update", false, "rewrite the generated table of ARCHITECTURE.md")

const (
	archDoc   = "../ARCHITECTURE.md"
	archBegin = "<!-- the house as the code has it, from the imports, by TestArchitectureDoc (go test ./internal -run TestArchitectureDoc -update): do not edit -->\n"
	archEnd   = "<!-- end of the generated table -->\n"
)

// house reads the module's production packages (cmd/memdoctor, preload,
// internal/...; test support, whose names end in "test", and the bench and
// lab programs are left out) and the module packages each imports.
func house(t *testing.T) map[string][]string {
	t.Helper()
	g := map[string][]string{}
	add := func(dir, name string) {
		bp, err := build.ImportDir(dir, 0)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				return
			}
			t.Fatalf("%s: %v", dir, err)
		}
		var deps []string
		for _, imp := range bp.Imports {
			if rest, ok := strings.CutPrefix(imp, module); ok && !isTestSupport(rest) {
				deps = append(deps, rest)
			}
		}
		slices.Sort(deps)
		g[name] = deps
	}
	add(filepath.Join("..", "cmd", "memdoctor"), "cmd/memdoctor")
	add(filepath.Join("..", "preload"), "preload")
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
		name := "internal/" + filepath.ToSlash(path)
		if isTestSupport(name) {
			return filepath.SkipDir
		}
		add(path, name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func isTestSupport(pkg string) bool {
	for _, part := range strings.Split(pkg, "/") {
		if strings.HasSuffix(part, "test") {
			return true
		}
	}
	return false
}

// floors puts every package one floor above the highest it imports; leaves
// are floor 1.
func floors(t *testing.T, g map[string][]string) map[string]int {
	t.Helper()
	floor := map[string]int{}
	var visit func(p string, path []string) int
	visit = func(p string, path []string) int {
		if f, ok := floor[p]; ok {
			return f
		}
		if slices.Contains(path, p) {
			t.Fatalf("import cycle: %s -> %s", strings.Join(path, " -> "), p)
		}
		f := 1
		for _, d := range g[p] {
			f = max(f, visit(d, append(path, p))+1)
		}
		floor[p] = f
		return f
	}
	for p := range g {
		visit(p, nil)
	}
	return floor
}

func TestArchitectureDoc(t *testing.T) {
	g := house(t)
	floor := floors(t, g)
	var pkgs []string
	for p := range g {
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b string) int {
		if floor[a] != floor[b] {
			return floor[b] - floor[a]
		}
		return strings.Compare(a, b)
	})
	third := (len(pkgs) - 1) / 3
	var b strings.Builder
	arrows, widest, widestPkg := 0, 0, ""
	fmt.Fprintf(&b, "| floor | package | imports of the module |\n|---:|---|---|\n")
	for _, p := range pkgs {
		deps := g[p]
		arrows += len(deps)
		if len(deps) > widest {
			widest, widestPkg = len(deps), p
		}
		for _, d := range deps {
			if floor[d] >= floor[p] {
				t.Errorf("%s (floor %d) imports %s (floor %d): an arrow that runs back up", p, floor[p], d, floor[d])
			}
		}
		if len(deps) > third {
			t.Errorf("%s imports %d of the house's %d other packages, more than a third (%d): split it by use", p, len(deps), len(pkgs)-1, third)
		}
		list := "(none: a leaf)"
		if len(deps) > 0 {
			list = "`" + strings.Join(deps, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s |\n", floor[p], p, list)
	}
	fmt.Fprintf(&b, "\n%d packages on %d floors, %d arrows; the widest imports %d (`%s`), at most a third of the others (%d) allowed.\n",
		len(pkgs), floor[pkgs[0]], arrows, widest, widestPkg, third)
	want := b.String()

	raw, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, archBegin), strings.Index(doc, archEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated table's markers (%q and %q)", archDoc, strings.TrimSpace(archBegin), strings.TrimSpace(archEnd))
	}
	if got := doc[i+len(archBegin) : j]; got != want {
		if !*updateArch {
			t.Errorf("%s: the generated table is not the code's (go test ./internal -run TestArchitectureDoc -update):\n got:\n%s\nwant:\n%s", archDoc, got, want)
			return
		}
		doc = doc[:i+len(archBegin)] + want + doc[j:]
		if err := os.WriteFile(archDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every package the table names has its paragraph in the page's words
	// (a room nobody explained is a room nobody can find).
	prose := doc[:i] + doc[j+len(archEnd):]
	for _, p := range pkgs {
		if !strings.Contains(prose, "`"+p+"`") {
			t.Errorf("%s never names `%s` outside the generated table: say what it is for", archDoc, p)
		}
	}
}
