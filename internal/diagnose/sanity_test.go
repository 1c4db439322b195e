package diagnose_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// A host whose meminfo series cannot be true, or lack what a rule needs,
// is not judged by the rules that read memory sizes: no finding, no "ok",
// and a note that names the series. (Each case once gave a finding or a
// silent "ok": MemAvailable missing read as 0 gave a critical
// low_available_memory; MemTotal 0 gave "ok"; a wrapped total printed as a
// negative size.)
func TestImpossibleMeminfoNotEvaluated(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	healthy := map[string]float64{"MemTotal": 16 * gib, "MemFree": 8 * gib, "MemAvailable": 10 * gib, "AnonPages": 2 * gib,
		"Active_file": 1 * gib, "Inactive_file": 1 * gib, "Shmem": 64 << 20, "SReclaimable": 256 << 20, "SUnreclaim": 128 << 20,
		"KernelStack": 16 << 20, "PageTables": 32 << 20}
	for _, tc := range []struct {
		name   string
		set    map[string]float64 // replaces healthy values; NaN deletes
		rule   string
		reason string
		says   string
	}{
		{"only MemTotal", map[string]float64{"MemFree": math.NaN(), "MemAvailable": math.NaN(), "AnonPages": math.NaN(),
			"Active_file": math.NaN(), "Inactive_file": math.NaN(), "Shmem": math.NaN(), "SReclaimable": math.NaN(),
			"SUnreclaim": math.NaN(), "KernelStack": math.NaN(), "PageTables": math.NaN()},
			"low_available_memory", model.SkipMissingData, "node_memory_MemAvailable_bytes"},
		{"MemAvailable missing, no estimate", map[string]float64{"MemAvailable": math.NaN(), "Active_file": math.NaN()},
			"low_available_memory", model.SkipMissingData, "node_memory_Active_file_bytes"},
		{"MemTotal 0", map[string]float64{"MemTotal": 0, "MemFree": 0, "MemAvailable": 0},
			"low_available_memory", model.SkipInvalidData, "node_memory_MemTotal_bytes is 0"},
		{"MemTotal negative", map[string]float64{"MemTotal": -5120},
			"low_available_memory", model.SkipInvalidData, "node_memory_MemTotal_bytes is negative"},
		{"MemTotal wrapped", map[string]float64{"MemTotal": 18446744073709551615 * 1024.0},
			"low_available_memory", model.SkipInvalidData, "beyond 8 EiB"},
		{"MemAvailable infinite", map[string]float64{"MemAvailable": math.Inf(1)},
			"low_available_memory", model.SkipInvalidData, "node_memory_MemAvailable_bytes is +Inf"},
		{"MemAvailable above MemTotal", map[string]float64{"MemAvailable": 32 * gib},
			"low_available_memory", model.SkipInvalidData, "node_memory_MemAvailable_bytes (32.0 GiB) is above node_memory_MemTotal_bytes"},
		{"unexplained: a category missing", map[string]float64{"Shmem": math.NaN(), "MemAvailable": 100 << 20},
			"kernel_memory_unexplained", model.SkipMissingData, "node_memory_Shmem_bytes"},
		{"MemTotal missing", map[string]float64{"MemTotal": math.NaN()},
			"low_available_memory", model.SkipMissingData, "node_memory_MemTotal_bytes"},
		{"slab: SUnreclaim negative", map[string]float64{"SUnreclaim": -1},
			"slab_unreclaimable_high", model.SkipInvalidData, "node_memory_SUnreclaim_bytes is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &sample.Snapshot{Time: time.Unix(1700000000, 0)}
			for k, v := range healthy {
				if nv, ok := tc.set[k]; ok {
					v = nv
				}
				if !math.IsNaN(v) {
					s.Add("node_memory_"+k+"_bytes", v)
				}
			}
			rep := diagnose.Run(diagnose.Data{Latest: s, Source: "test"})
			found, notes, cov, h := rep.Findings, rep.Notes, rep.Coverage, rep.Host
			for _, f := range found {
				if f.ID == tc.rule {
					t.Errorf("%s fired on data it cannot judge: %s", f.ID, f.Summary)
				}
			}
			if slices.Contains(cov.Evaluated, tc.rule) {
				t.Errorf("%s counted as evaluated", tc.rule)
			}
			i := slices.IndexFunc(cov.NotEvaluated, func(s model.RuleSkip) bool { return s.ID == tc.rule })
			if i < 0 {
				t.Fatalf("%s not listed as not evaluated: %+v", tc.rule, cov.NotEvaluated)
			}
			if sk := cov.NotEvaluated[i]; sk.Reason != tc.reason || !strings.Contains(sk.Detail, tc.says) {
				t.Errorf("%s: reason %q, detail %q; want %q saying %q", tc.rule, sk.Reason, sk.Detail, tc.reason, tc.says)
			}
			noted := false
			for _, n := range notes {
				noted = noted || strings.Contains(n.Source, tc.rule) && strings.Contains(n.Message, tc.says)
			}
			if !noted {
				t.Errorf("no note for %s saying %q: %+v", tc.rule, tc.says, notes)
			}
			// Numbers that cannot be are never shown unflagged.
			if a := h.Accounting; (a.TotalBytes < 0 || a.AvailableBytes < 0 || a.UsedPercent < 0) && a.Invalid == "" {
				t.Errorf("accounting holds impossible numbers, unflagged: total %d, available %d, used %.1f%%", a.TotalBytes, a.AvailableBytes, a.UsedPercent)
			}
			// Used memory is never an impossible number: it is a share
			// of a known total, or absent with the reason.
			if a := h.Accounting; a.UsedMissing == "" && (a.TotalBytes <= 0 || a.UsedBytes < 0 || a.UsedBytes > a.TotalBytes) {
				t.Errorf("used %d of total %d shown as a number", a.UsedBytes, a.TotalBytes)
			} else if a.UsedMissing != "" && (a.UsedBytes != 0 || a.UsedPercent != 0) {
				t.Errorf("used %d (%.1f%%) given although %q", a.UsedBytes, a.UsedPercent, a.UsedMissing)
			}
			if tc.reason == model.SkipInvalidData && !strings.Contains(h.Accounting.Invalid, tc.says) {
				t.Errorf("accounting.invalid = %q, want it to say %q", h.Accounting.Invalid, tc.says)
			}
		})
	}
}

// Trend rules do not fit a line through a point that cannot be.
func TestImpossibleWindowNotEvaluated(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &sample.Window{}
	total := &sample.Series{Name: "node_memory_MemTotal_bytes"}
	avail := &sample.Series{Name: "node_memory_MemAvailable_bytes"}
	for i := range 24 * 20 {
		ts := start.Add(time.Duration(i) * time.Hour).UnixMilli()
		total.Points = append(total.Points, sample.Point{T: ts, V: 16 * gib})
		v := 12*gib - float64(i)*(8<<20)
		if i == 100 {
			v = math.NaN()
		}
		avail.Points = append(avail.Points, sample.Point{T: ts, V: v})
	}
	w.Add(total)
	w.Add(avail)
	cov := diagnose.Run(diagnose.Data{Window: w, Source: "test"}).Coverage
	for _, id := range []string{"available_memory_decline", "memory_baseline_exceeded"} {
		i := slices.IndexFunc(cov.NotEvaluated, func(s model.RuleSkip) bool { return s.ID == id })
		if i < 0 || cov.NotEvaluated[i].Reason != model.SkipInvalidData || !strings.Contains(cov.NotEvaluated[i].Detail, "node_memory_MemAvailable_bytes is NaN at 2024-01-05 04:00:00 UTC") {
			t.Errorf("%s: %+v, want not evaluated for the NaN point", id, cov.NotEvaluated)
		}
	}
}

// Rules not evaluated for the same impossible value share one note.
func TestImpossibleDataOneNote(t *testing.T) {
	t.Parallel()
	s := &sample.Snapshot{Time: time.Unix(1700000000, 0)}
	for _, k := range []string{"MemFree", "MemAvailable", "AnonPages", "Active_file", "Inactive_file", "Shmem",
		"SReclaimable", "SUnreclaim", "KernelStack", "PageTables"} {
		s.Add("node_memory_"+k+"_bytes", 1<<20)
	}
	s.Add("node_memory_MemTotal_bytes", -5120)
	rep := diagnose.Run(diagnose.Data{Latest: s, Source: "test"})
	var got []string
	for _, n := range rep.Notes {
		if strings.Contains(n.Message, "impossible data") {
			got = append(got, n.Source)
		}
	}
	// The rules that skipped it, from the coverage (the registry's), so a
	// new rule that reads meminfo joins the note without editing this test.
	var skipped []string
	for _, sk := range rep.Coverage.NotEvaluated {
		if sk.Reason == model.SkipInvalidData {
			skipped = append(skipped, sk.ID)
		}
	}
	for _, id := range []string{"kernel_memory_unexplained", "low_available_memory", "slab_unreclaimable_high"} {
		if !slices.Contains(skipped, id) {
			t.Errorf("%s was not skipped for the impossible MemTotal: %v", id, skipped)
		}
	}
	if want := "rules " + strings.Join(skipped, ", "); len(got) != 1 || got[0] != want {
		t.Errorf("notes from %q, want one from %q", got, want)
	}
}
