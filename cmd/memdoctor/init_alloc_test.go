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
// not move it. All packages together, the dependencies' included, have a
// budget too: a dependency linked for one function (pprof's library, to
// write a profile) ran its initialisers in every command; a new one that
// does so is a choice to make, not an accident.
func TestInitAllocsWithinBudget(t *testing.T) {
	const (
		maxAllocs = 48
		maxBytes  = 8 << 10
		// All of them: 3,689 allocations, 561 KiB (Go 1.26).
		maxTotalAllocs = 4096
		maxTotalBytes  = 640 << 10
	)
	bin := binary(t)
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("memdoctor --version: %v\n%s%s", err, out, stderr.Bytes())
	}
	ours, allocs, nbytes := 0, 0, 0
	for _, l := range strings.Split(stderr.String(), "\n") {
		m := initLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		b, _ := strconv.Atoi(m[2])
		a, _ := strconv.Atoi(m[3])
		allocs += a
		nbytes += b
		if m[1] != "main" && !strings.HasPrefix(m[1], "github.com/memdoctor/memdoctor/") {
			continue
		}
		ours++
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
	if allocs > maxTotalAllocs || nbytes > maxTotalBytes {
		t.Errorf("the initialisers of all linked packages allocate %d bytes in %d allocations before main (budget %d bytes, %d allocations): "+
			"see which with GODEBUG=inittrace=1 memdoctor --version", nbytes, allocs, maxTotalBytes, maxTotalAllocs)
	}
}
