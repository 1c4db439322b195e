package heapprof

import (
	"errors"
	"strings"
	"testing"
)

const goodDump = `memdoctor heap profile 1
pid 42
rate 524288
time 1795558814764401204
samples 3
live 2
dropped 0
stack 2 1048576 1 524288 401136 401200
stack 1 600000 0 0 401150
maps
00400000-00401000 r--p 00000000 fe:00 10 /usr/bin/x
00401000-00402000 r-xp 00001000 fe:00 10 /usr/bin/x
`

func TestParse(t *testing.T) {
	d, err := Parse([]byte(goodDump))
	if err != nil {
		t.Fatal(err)
	}
	if d.PID != 42 || d.Rate != 524288 || d.Samples != 3 || d.Live != 2 || len(d.Stacks) != 2 || len(d.Maps) != 2 {
		t.Fatalf("%+v", d)
	}
	if s := d.Stacks[0]; s.InUseBytes != 524288 || s.AllocObjects != 2 || len(s.PCs) != 2 || s.PCs[0] != 0x401136 {
		t.Errorf("stack %+v", s)
	}
	if d.Time.UnixNano() != 1795558814764401204 {
		t.Errorf("time %v", d.Time)
	}
}

// A cut or damaged dump is an error naming the line, never a panic.
func TestParseDamaged(t *testing.T) {
	for name, mod := range map[string]func(string) string{
		"no maps":        func(s string) string { return s[:strings.Index(s, "maps")] },
		"other header":   func(s string) string { return strings.Replace(s, "profile 1", "profile 9", 1) },
		"bad count":      func(s string) string { return strings.Replace(s, "stack 2 ", "stack x ", 1) },
		"negative count": func(s string) string { return strings.Replace(s, "stack 2 ", "stack -2 ", 1) },
		"bad address":    func(s string) string { return strings.Replace(s, "401136", "40z136", 1) },
		"short stack":    func(s string) string { return strings.Replace(s, "stack 1 600000 0 0 401150", "stack 1 600000", 1) },
		"deep stack":     func(s string) string { return strings.Replace(s, "401150", strings.Repeat("401150 ", 40), 1) },
		"no rate":        func(s string) string { return strings.Replace(s, "rate 524288\n", "", 1) },
		"bad maps":       func(s string) string { return s + "garbage\n" },
	} {
		if _, err := Parse([]byte(mod(goodDump))); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
}

// A site's title keeps its first functions and cuts names a hostile or
// C++ binary makes long.
func TestSiteTitle(t *testing.T) {
	long := strings.Repeat("x", 500)
	s := Site{Stack: []string{"leaf", long, "c", "d", "e"}, Object: "/usr/lib/libingest.so"}
	got := s.Title(4)
	want := "leaf ← " + strings.Repeat("x", maxName) + "… ← c ← d (libingest.so)"
	if got != want {
		t.Errorf("Title(4) = %q, want %q", got, want)
	}
}
