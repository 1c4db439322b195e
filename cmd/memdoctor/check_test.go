package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
)

func capturePath(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "testdata", "captures", name+".txtar")
}

// TestCheckJSONShape pins the stable keys of `check --json`.
func TestCheckJSONShape(t *testing.T) {
	t.Parallel()
	out, errOut, code := runCLI(t, "check", "--json", "--capture", capturePath(t, "dying-cgroups-6.18-x86_64-hybrid"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host", "accounting", "zones", "cgroups", "slab", "processes", "findings", "notes"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("top-level key %q missing", k)
		}
	}
	zone := doc["zones"].([]any)[0].(map[string]any)
	for _, k := range []string{"node", "zone", "managed_pages", "free_pages", "min_pages", "low_pages", "high_pages", "what_if"} {
		if _, ok := zone[k]; !ok {
			t.Errorf("zones[0].%s missing", k)
		}
	}
	wi := zone["what_if"].([]any)
	var factors []float64
	for _, w := range wi {
		m := w.(map[string]any)
		for _, k := range []string{"watermark_scale_factor", "min_pages", "low_pages", "high_pages", "mem_available_delta_bytes"} {
			if _, ok := m[k]; !ok {
				t.Errorf("what_if.%s missing", k)
			}
		}
		factors = append(factors, m["watermark_scale_factor"].(float64))
	}
	if want := []float64{10, 50, 100, 200, 500}; !slices.Equal(factors, want) {
		t.Errorf("what_if factors %v, want %v (current first)", factors, want)
	}
	cg := doc["cgroups"].(map[string]any)
	for _, k := range []string{"memory_total", "memory_live", "memory_dying"} {
		if _, ok := cg[k]; !ok {
			t.Errorf("cgroups.%s missing", k)
		}
	}
	p := doc["processes"].([]any)[0].(map[string]any)
	for _, k := range []string{"pid", "comm", "rss_bytes", "pss_bytes", "uss_bytes", "swap_bytes"} {
		if _, ok := p[k]; !ok {
			t.Errorf("processes[0].%s missing", k)
		}
	}
	f := doc["findings"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "severity", "subject", "summary", "evidence", "remedies"} {
		if _, ok := f[k]; !ok {
			t.Errorf("findings[0].%s missing", k)
		}
	}
}

// TestLiveWatermarksMatchKernel: on this host the recomputed watermarks and
// protection equal /proc/zoneinfo for every zone.
func TestLiveWatermarksMatchKernel(t *testing.T) {
	if _, err := os.Stat("/proc/zoneinfo"); err != nil {
		t.Skip("no /proc/zoneinfo")
	}
	var r *model.Report
	// A zone whose managed pages grow while zoneinfo is printed (lazily
	// initialised memory) can differ once; a second read settles it.
	for try := 0; try < 3; try++ {
		r = checkJSON(t, "--top", "0")
		if len(r.Watermarks.Mismatches) == 0 {
			break
		}
	}
	if !r.Watermarks.Recomputed {
		t.Fatalf("watermarks not recomputed; notes %+v", r.Notes)
	}
	for _, m := range r.Watermarks.Mismatches {
		t.Error(m)
	}
	if len(r.Zones) == 0 {
		t.Fatal("no zones")
	}
	for _, z := range r.Zones {
		if z.MatchesKernel == nil || !*z.MatchesKernel {
			t.Errorf("zone %s does not match the kernel", z.Zone)
		}
	}
}

func TestCheckFailOn(t *testing.T) {
	t.Parallel()
	_, _, code := runCLI(t, "check", "--capture", capturePath(t, "dying-cgroups-6.18-x86_64-hybrid"), "--fail-on", "warning")
	if code != 2 {
		t.Errorf("exit %d with a warning finding and --fail-on warning, want 2", code)
	}
	_, _, code = runCLI(t, "check", "--capture", capturePath(t, "healthy-6.18-x86_64-hybrid"), "--fail-on", "info")
	if code != 0 {
		t.Errorf("exit %d on a healthy capture, want 0", code)
	}
	_, errOut, code := runCLI(t, "check", "--fail-on", "bad")
	if code != 1 || !strings.Contains(errOut, "--fail-on") {
		t.Errorf("bad --fail-on: exit %d, %q", code, errOut)
	}
}

func TestCheckTextReport(t *testing.T) {
	t.Parallel()
	out, errOut, code := runCLI(t, "check", "--capture", capturePath(t, "malloc-arenas-6.18-x86_64-hybrid"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"FINDINGS", "[WARNING] malloc_arenas_many", "MEMORY", "used", "ZONES", "what if watermark_scale_factor",
		"CGROUPS", "dying", "SLAB", "PROCESSES", "arenas", "MemFree is not the number to watch",
		"of which vmalloc", "of which not_in_meminfo", "unexplained: kernel memory that no meminfo category counts", "alloc_pages"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour codes written to a non-terminal")
	}
}

func TestBadSources(t *testing.T) {
	t.Parallel()
	_, errOut, code := runCLI(t, "check", "--capture", filepath.Join(t.TempDir(), "missing.txtar"))
	if code != 1 || !strings.Contains(errOut, "missing.txtar") {
		t.Errorf("missing capture: exit %d, %q", code, errOut)
	}
	junk := filepath.Join(t.TempDir(), "junk.txtar")
	if err := os.WriteFile(junk, []byte("not a capture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "check", "--capture", junk)
	if code != 1 || !strings.Contains(errOut, "capture") {
		t.Errorf("junk capture: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "check", "--root", junk)
	if code != 1 || !strings.Contains(errOut, "--capture") {
		t.Errorf("--root on a file: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "check", "--root", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "meminfo") {
		t.Errorf("--root on an empty dir: exit %d, %q", code, errOut)
	}
}

// TestCheckWithoutRoot runs the binary as nobody: it works, and says what
// it could not read and what that hides.
func TestCheckWithoutRoot(t *testing.T) {
	requireLinuxRoot(t)
	bin := binary(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "check", "--json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check as nobody: %v", err)
	}
	var r model.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	var slabNote bool
	for _, n := range r.Notes {
		if n.Source == "proc/slabinfo" && strings.Contains(n.Message, "permission") && n.Hides != "" && n.Fix != "" {
			slabNote = true
		}
	}
	if !slabNote {
		t.Errorf("no note about unreadable slabinfo: %+v", r.Notes)
	}
	if r.Accounting.TotalBytes == 0 || len(r.Zones) == 0 {
		t.Error("accounting or zones missing without root")
	}
	if r.Slab.UnreclaimableBytes == 0 {
		t.Error("slab totals from meminfo missing without root")
	}
}
