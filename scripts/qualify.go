//go:build ignore

// qualify rewrites Go files after identifiers moved from their package to
// another one: every use of a listed name that its file does not declare
// (an identifier the parser leaves unresolved: not a field, not a selector,
// not a composite literal key, not a local) is prefixed with the new
// package's name, and the import is added. Comments and strings are left
// alone. Run goimports afterwards to sort the import block.
//
// usage: go run scripts/qualify.go -pkg model -path MODULE/internal/model -names A,B,C FILE...
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
)

func main() {
	pkg := flag.String("pkg", "", "name of the package the identifiers moved to")
	path := flag.String("path", "", "its import path")
	names := flag.String("names", "", "comma-separated identifiers that moved")
	flag.Parse()
	if *pkg == "" || *path == "" || *names == "" {
		flag.Usage()
		os.Exit(2)
	}
	moved := map[string]bool{}
	for _, n := range strings.Split(*names, ",") {
		moved[strings.TrimSpace(n)] = true
	}
	for _, file := range flag.Args() {
		if err := rewrite(file, *pkg, *path, moved); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func rewrite(file, pkg, path string, moved map[string]bool) error {
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return err
	}
	var at []int
	for _, id := range f.Unresolved {
		if moved[id.Name] {
			at = append(at, fset.Position(id.Pos()).Offset)
		}
	}
	if len(at) == 0 {
		return nil
	}
	slices.Sort(at)
	var b strings.Builder
	last := 0
	for _, o := range at {
		b.Write(src[last:o])
		b.WriteString(pkg + ".")
		last = o
	}
	b.Write(src[last:])
	out := b.String()
	imported := false
	for _, im := range f.Imports {
		if strings.Trim(im.Path.Value, `"`) == path {
			imported = true
		}
	}
	if !imported {
		// Into the first parenthesised import block, or as a block of its
		// own after the package clause.
		at0, line := fset.Position(f.Name.End()).Offset, "\n\nimport \""+path+"\""
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT && g.Lparen.IsValid() {
				at0, line = fset.Position(g.Lparen).Offset+1, "\n\t\""+path+"\""
				break
			}
		}
		orig := at0
		for _, o := range at {
			if o < orig {
				at0 += len(pkg) + 1
			}
		}
		out = out[:at0] + line + out[at0:]
	}
	return os.WriteFile(file, []byte(out), 0o644)
}
