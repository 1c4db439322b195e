package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"golang.org/x/tools/txtar"
)

// captureWithout writes a copy of a real capture with some files left out,
// as a host that lacks them (or refused them) would be captured.
func captureWithout(t *testing.T, name string, drop ...string) string {
	t.Helper()
	a, err := txtar.ParseFile(capturePath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	var kept []txtar.File
	dropped := 0
	for _, f := range a.Files {
		skip := false
		for _, d := range drop {
			skip = skip || f.Name == d
		}
		if skip {
			dropped++
			continue
		}
		kept = append(kept, f)
	}
	if dropped != len(drop) {
		t.Fatalf("capture %s lacks some of %v", name, drop)
	}
	a.Files = kept
	out := filepath.Join(t.TempDir(), "partial.txtar")
	if err := os.WriteFile(out, txtar.Format(a), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// head returns the lines of a text report before its FINDINGS heading.
func head(out string) string {
	h, _, _ := strings.Cut(out, "FINDINGS")
	return h
}

// checkCoverage asserts what every coverage must hold: each rule is either
// evaluated or not, with a reason; trend rules are not evaluated on a
// snapshot.
func checkCoverage(t *testing.T, c model.Coverage) {
	t.Helper()
	if c.Rules != len(diagnose.Rules()) {
		t.Errorf("coverage counts %d rules, memdoctor has %d", c.Rules, len(diagnose.Rules()))
	}
	if len(c.Evaluated)+len(c.NotEvaluated) != c.Rules {
		t.Errorf("%d evaluated + %d not evaluated != %d rules", len(c.Evaluated), len(c.NotEvaluated), c.Rules)
	}
	for _, r := range diagnose.Rules() {
		if !r.Meta().Trend {
			continue
		}
		found := false
		for _, s := range c.NotEvaluated {
			found = found || (s.ID == r.Meta().ID && s.Reason == model.SkipNeedsRange && s.Fix != "")
		}
		if !found {
			t.Errorf("trend rule %s is not listed as needing a time range on a snapshot: %+v", r.Meta().ID, c.NotEvaluated)
		}
	}
	for _, s := range c.NotEvaluated {
		if s.Reason == "" || s.Detail == "" {
			t.Errorf("not-evaluated rule without a reason: %+v", s)
		}
	}
}

// TestCheckSaysCoverageUpFront: check says, before any finding, how many
// rules ran and which could not and why; a capture missing files is a
// partial view and says so in its first lines, never a plain "ok".
func TestCheckSaysCoverageUpFront(t *testing.T) {
	t.Parallel()
	full := capturePath(t, "healthy-6.18-x86_64-hybrid")
	out, errOut, code := runCLI(t, "check", "--capture", full)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	h := head(out)
	if !strings.Contains(h, "rules: ") || !strings.Contains(h, fmt.Sprintf(" of %d evaluated", len(diagnose.Rules()))) {
		t.Errorf("the head does not say how many rules ran:\n%s", h)
	}
	if strings.Contains(h, "slabinfo") || strings.Contains(h, "proc/pressure") {
		t.Errorf("slabinfo or PSI called unread in a capture that holds them:\n%s", h)
	}
	if !strings.Contains(h, "need a time range") || !strings.Contains(h, "available_memory_decline") {
		t.Errorf("the head does not say which rules need a recording:\n%s", h)
	}
	if strings.Contains(out, "ok: no problems found by 17 rules") {
		t.Errorf("claims all rules found nothing while trend rules cannot run on a snapshot:\n%s", out)
	}
	r := checkJSON(t, "--capture", full)
	checkCoverage(t, r.Coverage)
	// This capture was taken where one process' smaps_rollup was refused:
	// that alone is its partial part.
	if len(r.Coverage.Unread) != 1 || !strings.Contains(r.Coverage.Unread[0], "smaps_rollup") {
		t.Errorf("unread parts of the capture: %+v", r.Coverage.Unread)
	}
	if len(r.Coverage.Evaluated) == 0 {
		t.Errorf("no rule evaluated on a full capture: %+v", r.Coverage)
	}

	partial := captureWithout(t, "healthy-6.18-x86_64-hybrid", "proc/slabinfo", "proc/pressure/memory")
	out, errOut, code = runCLI(t, "check", "--capture", partial)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Line 1 names the host, line 2 the capture, line 3 says partial.
	if lines := strings.SplitN(out, "\n", 4); len(lines) < 4 || !strings.HasPrefix(lines[2], "PARTIAL VIEW") {
		t.Errorf("the third line does not say the view is partial:\n%s", out)
	}
	h = head(out)
	for _, want := range []string{"proc/slabinfo", "proc/pressure/memory"} {
		if !strings.Contains(h, want) {
			t.Errorf("the head does not name %s as unread:\n%s", want, h)
		}
	}
	if strings.Contains(out, "ok: no problems") {
		t.Errorf("a partial view says ok:\n%s", out)
	}
	r = checkJSON(t, "--capture", partial)
	checkCoverage(t, r.Coverage)
	if !r.Coverage.Partial || len(r.Coverage.Unread) < 3 {
		t.Errorf("capture without slabinfo and PSI not partial in JSON: %+v", r.Coverage)
	}
}

// TestCheckWithoutRootSaysPartial runs check as nobody: unreadable
// processes and slabinfo make the view partial, said in the first lines
// of the text and as fields of the JSON.
func TestCheckWithoutRootSaysPartial(t *testing.T) {
	requireLinuxRoot(t)
	bin := binary(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v as nobody: %v", args, err)
		}
		return string(out)
	}
	out := run("check")
	h := head(out)
	if !strings.HasPrefix(strings.SplitN(out, "\n", 3)[1], "PARTIAL VIEW") {
		t.Errorf("a run without root does not say up front that its view is partial:\n%s", out)
	}
	for _, want := range []string{"proc/slabinfo", "could not be read", "rules: "} {
		if !strings.Contains(h, want) {
			t.Errorf("head lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(out, "ok: no problems") {
		t.Errorf("a partial view says ok:\n%s", out)
	}
	var r model.Report
	if err := json.Unmarshal([]byte(run("check", "--json")), &r); err != nil {
		t.Fatal(err)
	}
	checkCoverage(t, r.Coverage)
	slab := false
	for _, u := range r.Coverage.Unread {
		slab = slab || strings.HasPrefix(u, "proc/slabinfo")
	}
	if !r.Coverage.Partial || !slab {
		t.Errorf("JSON coverage of a run without root: %+v", r.Coverage)
	}
}

// diagnose says up front too which rules judged the range, per instance
// merged: a rule counts as evaluated only if it was on every instance.
func TestDiagnoseSaysCoverageUpFront(t *testing.T) {
	t.Parallel()
	om := filepath.Join(t.TempDir(), "two.om")
	var b strings.Builder
	b.WriteString("# TYPE node_memory_MemAvailable_bytes gauge\n# TYPE node_memory_MemTotal_bytes gauge\n")
	for d := int64(0); d <= 2; d++ {
		ts := 1700000000 + d*86400
		fmt.Fprintf(&b, "node_memory_MemAvailable_bytes{instance=\"a\"} 4e9 %d\nnode_memory_MemTotal_bytes{instance=\"a\"} 8e9 %d\n", ts, ts)
		fmt.Fprintf(&b, "node_memory_MemAvailable_bytes{instance=\"b\"} 4e9 %d\n", ts)
	}
	b.WriteString("# EOF\n")
	if err := os.WriteFile(om, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "diagnose", "--from", om)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	h := head(out)
	for _, want := range []string{"rules: ", "lack their data", "had too little data: available_memory_decline"} {
		if !strings.Contains(h, want) {
			t.Errorf("head lacks %q:\n%s", want, h)
		}
	}
	out, _, _ = runCLI(t, "diagnose", "--from", om, "--json")
	var r model.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	c := r.Coverage
	if len(c.Evaluated)+len(c.NotEvaluated) != c.Rules || c.Rules != len(diagnose.Rules()) {
		t.Errorf("merged coverage does not add up: %+v", c)
	}
	// low_available_memory has MemTotal on a, not on b: not evaluated, named b.
	found := false
	for _, s := range c.NotEvaluated {
		found = found || s.ID == "low_available_memory" && strings.HasPrefix(s.Detail, "b: ")
	}
	if !found || slices.Contains(c.Evaluated, "low_available_memory") {
		t.Errorf("a rule skipped on one instance is not listed with it: %+v", c)
	}
}
