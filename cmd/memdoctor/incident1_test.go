package main

// Incident 1 end to end: a cron-saved directory of meminfo/slabinfo/cgroups
// files in the incident's layout (real kernel text with the incident's
// shape injected) is diagnosed; the 5.0 rack and the 5.3 rack are told
// apart, also when both come as instances of one OpenMetrics file.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/incidenttest"
	"github.com/memdoctor/memdoctor/internal/source"
	"github.com/memdoctor/memdoctor/internal/store"
)

// incidentDir returns incident 1's cron directory of the given shape,
// written once per run for the tests, which only read its 6,048 files.
func incidentDir(t *testing.T, shape incidenttest.Incident1Shape) string {
	t.Helper()
	opt := incidenttest.Incident1Options{Days: 14, Interval: 10 * time.Minute, Shape: shape,
		Capture: filepath.Join(repoRoot(t), incidenttest.Incident1BaseCapture)}
	return buildOnce(t, fmt.Sprintf("incident1-shape-%d", shape), func(dir string) (string, error) {
		return dir, incidenttest.WriteIncident1CronDir(dir, opt)
	})
}

func TestIncident1CronDirectory(t *testing.T) {
	skipShort(t)
	t.Parallel()
	k50 := incidentDir(t, incidenttest.Shape50)
	names, _ := os.ReadDir(k50)
	if len(names) < 3*14*144 || !strings.HasPrefix(names[0].Name(), "cgroups_2020-01-01.00:00") {
		t.Fatalf("generated directory has %d files, first %q", len(names), names[0].Name())
	}
	r := diagnoseJSON(t, k50)
	d := finding(r, "dying_cgroups")
	if d == nil {
		t.Fatalf("5.0 rack: dying_cgroups did not fire: %+v", r.Findings)
	}
	if v, _ := evidence(d, "memory_cgroups_per_day"); v < 9000 || v > 11000 {
		t.Errorf("memory cgroups per day %v, want ≈10 000 (the generated rate)", v)
	}
	if v, ok := evidence(d, "correlation_with_slab_unreclaimable"); !ok || v < 0.9 {
		t.Errorf("correlation with SUnreclaim %v, want > 0.9", v)
	}
	var sawKernel bool
	for _, e := range d.Evidence {
		sawKernel = sawKernel || (e.Name == "kernel_slab_reparenting" && strings.Contains(e.Text, "before 5.3"))
	}
	if !sawKernel {
		t.Errorf("the 5.0 kernel's lack of slab reparenting is not named: %+v", d.Evidence)
	}
	s := finding(r, "slab_unreclaimable_growth")
	if s == nil {
		t.Fatalf("5.0 rack: slab_unreclaimable_growth did not fire: %+v", r.Findings)
	}
	// 4 GB a week ≈ 571 MB a day.
	if v, _ := evidence(s, "slab_unreclaimable_slope_bytes_per_day"); v < 450e6 || v > 700e6 {
		t.Errorf("SUnreclaim slope %v bytes/day, want ≈571e6", v)
	}
	caches := ""
	for _, e := range s.Evidence {
		if e.Name == "cache" {
			caches += e.Text + "; "
		}
	}
	if !strings.Contains(caches, "kmalloc") {
		t.Errorf("growth not attributed to the kmalloc caches: %q", caches)
	}
	if finding(r, "available_memory_decline") == nil {
		t.Errorf("5.0 rack: available_memory_decline did not fire")
	}

	k53 := incidentDir(t, incidenttest.Shape53)
	r = diagnoseJSON(t, k53)
	for _, id := range []string{"dying_cgroups", "slab_unreclaimable_growth", "available_memory_decline"} {
		if f := finding(r, id); f != nil {
			t.Errorf("5.3 rack: %s fired: %s", id, f.Summary)
		}
	}

	// Both racks as instances of one OpenMetrics file.
	db := filepath.Join(t.TempDir(), "both.db")
	st, err := store.Open(db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for inst, dir := range map[string]string{"rack-5.0": k50, "rack-5.3": k53} {
		if _, err := source.Ingest(dir, st, source.IngestOptions{Instance: inst}); err != nil {
			t.Fatal(err)
		}
	}
	om := filepath.Join(t.TempDir(), "both.om")
	f, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ExportOpenMetrics(f, store.Query{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st.Close()
	r = diagnoseJSON(t, om)
	var subjects []string
	for _, f := range r.Findings {
		if f.ID == "dying_cgroups" {
			subjects = append(subjects, f.Subject)
		}
	}
	if len(subjects) != 1 || !strings.HasPrefix(subjects[0], "rack-5.0") {
		t.Errorf("dying_cgroups subjects %v, want exactly rack-5.0", subjects)
	}
}
