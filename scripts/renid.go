//go:build ignore

// renid renames identifier tokens, not comments or strings:
//
//	go run scripts/renid.go old=new,old2=new2 FILE...
package main

import (
	"go/scanner"
	"go/token"
	"os"
	"strings"
)

func main() {
	m := map[string]string{}
	for _, kv := range strings.Split(os.Args[1], ",") {
		a, b, _ := strings.Cut(kv, "=")
		m[a] = b
	}
	for _, f := range os.Args[2:] {
		src, _ := os.ReadFile(f)
		fset := token.NewFileSet()
		file := fset.AddFile(f, -1, len(src))
		var s scanner.Scanner
		s.Init(file, src, nil, scanner.ScanComments)
		var b strings.Builder
		last := 0
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.IDENT {
				continue
			}
			if n, ok := m[lit]; ok {
				o := file.Offset(pos)
				b.Write(src[last:o])
				b.WriteString(n)
				last = o + len(lit)
			}
		}
		b.Write(src[last:])
		if b.String() != string(src) {
			os.WriteFile(f, []byte(b.String()), 0o644)
		}
	}
}
