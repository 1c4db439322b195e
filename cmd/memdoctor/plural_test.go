package main

// Counts read as English: a single-threaded process held by `malloc` is
// "1 thread in the process" and "has no other threads", never "1 threads"
// or "its other 0 threads"; its one arena is "1 arena".

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// badCount matches a count of one with a plural noun, or a count of zero
// "other" things.
var badCount = regexp.MustCompile(`(^|[^0-9.])1 (threads|arenas|calls|processes|filters|mmapped chunks)\b|other 0 `)

func TestCountsSingularOnOneThread(t *testing.T) {
	requirePtraceHere(t)
	w := startAllocWorkload(t, false, "hoard", "0", "1")
	pid := fmt.Sprint(w.pid)

	out, errOut, code := runMallocCLI(t, "malloc", pid)
	skipDenied(t, errOut)
	if code != 0 {
		t.Fatalf("malloc exited %d: %s", code, errOut)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	for _, s := range []string{out, errOut} {
		if m := badCount.FindString(s); m != "" {
			t.Errorf("wrong number: %q in\n%s", m, s)
		}
	}
	for _, want := range []string{"1 arena;", "1 thread in the process"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !strings.Contains(errOut, "it has no other threads") {
		t.Errorf("stderr does not say the process has no other threads: %q", errOut)
	}
	notStopped(t, w.pid)
}
