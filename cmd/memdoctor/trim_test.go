package main

// `memdoctor trim`: the dry run changes nothing and shows the commands,
// --apply gives the hoarded memory back and prints incident 5's JSON.

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// vmRSS reads VmRSS of pid in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

func TestTrimCommand(t *testing.T) {
	requirePtraceHere(t)
	w := startAllocWorkload(t, false, "hoard", "8", "64")
	pid := fmt.Sprint(w.pid)
	rss0 := vmRSS(t, w.pid)

	// Dry run: the estimate (a call into the process) and the steps; nothing
	// changes.
	out, errOut, code := runMallocCLI(t, "trim", pid)
	skipDenied(t, errOut)
	if code != 0 {
		t.Fatalf("trim exited %d: %s", code, errOut)
	}
	t.Logf("dry run:\n%s\n%s", out, errOut)
	for _, want := range []string{"dry run, nothing changed", "expected gain", "--apply calls malloc_trim(0) inside the process",
		"throwaway child", "PTRACE_SEIZE", "extended (vector) state", "restore registers", "memdoctor trim " + pid + " --apply"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q", want)
		}
	}
	if !strings.Contains(errOut, "holding one thread of pid "+pid+" briefly") {
		t.Errorf("dry run did not warn of the pause: %q", errOut)
	}
	if rss := vmRSS(t, w.pid); rss < rss0*95/100 {
		t.Errorf("the dry run changed RSS %d -> %d", rss0, rss)
	}

	// --no-pause: /proc only, an upper bound.
	out, errOut, code = runMallocCLI(t, "trim", pid, "--no-pause", "--json")
	if code != 0 {
		t.Fatalf("trim --no-pause exited %d: %s", code, errOut)
	}
	var est struct {
		Source     string `json:"source"`
		UpperBound *int64 `json:"upper_bound_bytes"`
		Expected   *int64 `json:"expected_gain_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &est); err != nil {
		t.Fatal(err)
	}
	if est.Source != "smaps" || est.UpperBound == nil || *est.UpperBound < 400<<20 || est.Expected != nil || strings.Contains(errOut, "holding") {
		t.Errorf("--no-pause: %s (stderr %q)", out, errOut)
	}
	if _, errOut, code := runMallocCLI(t, "trim", pid, "--no-pause", "--apply"); code == 0 || !strings.Contains(errOut, "--no-pause is for the dry run") {
		t.Errorf("--no-pause --apply: exit %d, %q", code, errOut)
	}

	// The expected gain, then --apply --json.
	out, _, code = runMallocCLI(t, "trim", pid, "--json")
	if code != 0 {
		t.Fatal("trim --json failed")
	}
	var dry struct {
		Expected int64 `json:"expected_gain_bytes"`
		Retained int64 `json:"retained_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &dry); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runMallocCLI(t, "trim", pid, "--apply", "--json")
	if code != 0 {
		t.Fatalf("trim --apply exited %d: %s", code, errOut)
	}
	t.Logf("--apply --json:\n%s\n%s", out, errOut)
	var res struct {
		ElapsedMs *float64 `json:"elapsedMs"`
		RSS       *struct {
			Before, After, Diff int64
		} `json:"rss"`
		Source string `json:"source"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), "{\n  \"elapsedMs\":") {
		t.Errorf("the JSON does not start like incident 5's log: %.40q", out)
	}
	if res.ElapsedMs == nil || res.RSS == nil || res.RSS.Diff != res.RSS.Before-res.RSS.After || res.Source != "ptrace" {
		t.Fatalf("result %s", out)
	}
	if float64(res.RSS.Diff) < 0.9*float64(dry.Retained) {
		t.Errorf("freed %d, < 90%% of the %d retained", res.RSS.Diff, dry.Retained)
	}
	if float64(res.RSS.Diff) < 0.9*float64(dry.Expected) {
		t.Errorf("freed %d, < 90%% of the expected gain %d", res.RSS.Diff, dry.Expected)
	}
	notStopped(t, w.pid)
	w.do("more")

	// The readable line.
	out, _, code = runMallocCLI(t, "trim", pid, "--apply")
	if code != 0 || !strings.Contains(out, "trimmed pid "+pid+": RSS") || !strings.Contains(out, "called in the process, thread "+pid+" held") {
		t.Errorf("trim --apply: exit %d\n%s", code, out)
	}
	notStopped(t, w.pid)
	w.do("info")
}
