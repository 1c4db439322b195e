package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// initLine is one package's line of GODEBUG=inittrace=1:
// "init PKG @T ms, C ms clock, B bytes, A allocs".
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)

// Every command pays for every linked package's initialisers before main,
// check most visibly (a short run that reads a few hundred files). So
// memdoctor's own packages keep their initialisers to registering what
// they have: templates, regular expressions and tables are built on first
// use. The budget is per package, in the allocations and bytes the runtime
// counts for its initialiser, never its clock time, so a loaded host does
// not move it.
func TestInitAllocsWithinBudget(t *testing.T) {
	const (
		maxAllocs = 48
		maxBytes  = 8 << 10
	)
	bin := binary(t)
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("memdoctor --version: %v\n%s%s", err, out, stderr.Bytes())
	}
	ours := 0
	for _, l := range strings.Split(stderr.String(), "\n") {
		m := initLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil || (m[1] != "main" && !strings.HasPrefix(m[1], "github.com/memdoctor/memdoctor/")) {
			continue
		}
		ours++
		b, _ := strconv.Atoi(m[2])
		a, _ := strconv.Atoi(m[3])
		if a > maxAllocs || b > maxBytes {
			t.Errorf("%s allocates %d bytes in %d allocations before main (budget %d bytes, %d allocations): build it on first use (sync.OnceValue)",
				m[1], b, a, maxBytes, maxAllocs)
		}
	}
	// Packages whose initialisers do nothing print no line; memdoctor
	// registers its collectors and rules at init, so some must.
	if ours < 3 {
		t.Fatalf("GODEBUG=inittrace=1 showed %d of memdoctor's packages; stderr:\n%s", ours, stderr.String())
	}
}
