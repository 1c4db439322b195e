package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// findingLines returns the memdoctor_finding* sample lines of a /metrics body.
func findingLines(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "memdoctor_finding") {
			out = append(out, l)
		}
	}
	return out
}

// waitMetrics polls /metrics until ok accepts the body.
func waitMetrics(t *testing.T, r *recorder, within time.Duration, ok func(string) bool) (string, bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	var body string
	for time.Now().Before(deadline) {
		_, body = r.get("/metrics")
		if ok(body) {
			return body, true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return body, false
}

// TestRecorderServesFindings: the recorder's /metrics carries the verdicts
// of its recording. Dying memory cgroups made by the test (removed cgroups
// whose page cache pins them) make dying_cgroups appear with its evidence;
// deleting the files makes it go again. promtool accepts the families.
func TestRecorderServesFindings(t *testing.T) {
	requireLinuxRoot(t)
	root, _ := memoryHierarchy(t)
	db := filepath.Join(t.TempDir(), "md.db")
	r := startRecorder(t, db, 300*time.Millisecond, "--findings-every", "1s")

	// The first evaluation: a success, and the evaluation's own series.
	body, ok := waitMetrics(t, r, 30*time.Second, func(b string) bool {
		return strings.Contains(b, "\nmemdoctor_findings_evaluation_success 1")
	})
	if !ok {
		t.Fatalf("no successful evaluation of the findings within 30 s:\n%s\nlog:\n%s", strings.Join(findingLines(body), "\n"), r.logText())
	}
	for _, want := range []string{"# TYPE memdoctor_findings_evaluation_seconds gauge", "memdoctor_findings_evaluated_timestamp_seconds "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	before := dyingOf(t)
	// The finding fires from 100; a host within 50 of that (its own churn
	// adds some while the test runs) cannot show it going.
	quiet := before < 50 && !strings.Contains(body, `memdoctor_finding{id="dying_cgroups"`)
	if !quiet {
		t.Logf("host already has %d dying memory cgroups: the quiet state is not checked", before)
	}

	dataDir := t.TempDir()
	prefix := fmt.Sprintf("memdoctor_fnd_%d_", os.Getpid())
	var dirs []string
	t.Cleanup(func() {
		for _, d := range dirs {
			_ = os.Remove(d)
		}
	})
	const n = 300
	for i := 0; i < n; i++ {
		d := filepath.Join(root, prefix+strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
		script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec dd if=/dev/zero of=%s/f%d bs=64k count=2 status=none", d, dataDir, i)
		if out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("writer: %v %s", err, out)
		}
	}
	for _, d := range dirs {
		for try := 0; try < 50 && os.Remove(d) != nil; try++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	// An evaluation made after the cgroups were removed: on a host that
	// already has dying cgroups the finding is there from the start, with
	// the count from before.
	want := float64(before + n*9/10)
	dying := func(b string) float64 {
		for _, l := range findingLines(b) {
			if strings.HasPrefix(l, `memdoctor_finding_evidence{id="dying_cgroups",`) && strings.Contains(l, `name="memory_cgroups_dying"`) {
				v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
				return v
			}
		}
		return -1
	}
	body, ok = waitMetrics(t, r, 30*time.Second, func(b string) bool {
		return strings.Contains(b, `memdoctor_finding{id="dying_cgroups",severity="warning"`) && dying(b) >= want
	})
	if !ok {
		t.Fatalf("dying_cgroups with at least %.0f dying cgroups (%d before, %d made) did not appear on /metrics within 30 s:\n%s\nlog:\n%s", want, before, n, strings.Join(findingLines(body), "\n"), r.logText())
	}
	if promtool, err := exec.LookPath("promtool"); err != nil {
		t.Log("promtool not installed (scripts/install-test-deps.sh installs it): the exposition format is not checked")
	} else {
		var fams strings.Builder
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "memdoctor_finding") || strings.HasPrefix(l, "# HELP memdoctor_finding") || strings.HasPrefix(l, "# TYPE memdoctor_finding") {
				fams.WriteString(l + "\n")
			}
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(fams.String())
		if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("promtool check metrics: %v\n%s\non:\n%s", err, out, fams.String())
		}
	}
	t.Logf("served: %s", strings.Join(findingLines(body), " | "))

	// Deleting the files frees the cgroups: the finding goes.
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	if quiet {
		body, ok = waitMetrics(t, r, 30*time.Second, func(b string) bool {
			return strings.Contains(b, "evaluation_success 1") && !strings.Contains(b, `memdoctor_finding{id="dying_cgroups"`)
		})
		if !ok {
			t.Errorf("dying_cgroups still served 30 s after its cgroups were freed:\n%s", strings.Join(findingLines(body), "\n"))
		}
	}
	r.stop(t)
}
