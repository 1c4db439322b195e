package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckContainersSection: a unit-like cgroup of the test's own, with a
// 64 MiB limit and a process holding 56 MiB in it, is listed under
// CONTAINERS by its unit name with its limit and working set.
func TestCheckContainersSection(t *testing.T) {
	root := v1Root(t)
	rel := filepath.Join(fmt.Sprintf("memdoctor-containers-%d-%d", os.Getpid(), time.Now().UnixNano()), "memdoctor-test.service")
	liveCgroup(t, root, rel)
	dir := filepath.Join(root, rel)
	stdout, stderr, code := runCLI(t, "check", "--top", "3")
	if code > 2 {
		t.Fatalf("check exit %d: %s", code, stderr)
	}
	_, section, ok := strings.Cut(stdout, "\nCONTAINERS")
	if !ok {
		t.Fatalf("no CONTAINERS section:\n%s", stdout)
	}
	section, _, _ = strings.Cut(section, "\n\n")
	cg := strings.TrimPrefix(dir, root)
	var row string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasSuffix(l, "memdoctor-test.service ("+cg+")") {
			row = l
		}
	}
	if row == "" {
		t.Fatalf("the test's unit is not listed by name under CONTAINERS:\n%s", section)
	}
	f := strings.Fields(row)
	if len(f) < 9 || f[0]+" "+f[1] != "64.0 MiB" {
		t.Errorf("row %q: want its 64 MiB limit first", row)
	}
	t.Logf("%s", row)
}
