package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// statusKB reads one "Name:  N kB" line of /proc/PID/status.
func statusKB(t *testing.T, pid int, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == name+":" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skipf("no %s in /proc/PID/status", name)
	return 0
}
