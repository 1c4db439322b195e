package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/human"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// SchemaVersion is the version of the JSON report. Keys are only ever added
// within a version.
const SchemaVersion = 1

// Report is what `memdoctor check` prints: the host model, findings and
// notes. Its JSON form is a stable interface.
type Report struct {
	SchemaVersion int `json:"schema_version"`
	*Host
	Findings []Finding     `json:"findings"`
	Notes    []sample.Note `json:"notes"`
	// Coverage says which rules ran and whether the data is partial: an
	// empty list of findings means "ok" only that far.
	Coverage Coverage `json:"coverage"`
	// Cost is what collecting took (live collections only).
	Cost *Cost `json:"cost,omitempty"`
	// Cgroup is the cgroup check --cgroup focused on.
	Cgroup *CgroupDetail `json:"cgroup,omitempty"`
}

// Cost is the price of looking.
type Cost struct {
	DurationSeconds float64            `json:"duration_seconds"`
	Collectors      map[string]float64 `json:"collectors_seconds"`
	SmapsReads      int                `json:"smaps_rollup_reads"`
	Vanished        int                `json:"processes_vanished"`
}

// Check analyses one scrape and runs every rule.
func Check(s *sample.Scrape, source string, notes []sample.Note) *Report {
	h := Analyze(s, source)
	return run(&Input{Host: h}, notes)
}

// CheckWindow diagnoses a time range: the instant rules on the state at its
// end, the trend rules on the whole window.
func CheckWindow(w *sample.Window, source string, notes []sample.Note) *Report {
	h := Analyze(LatestScrape(w, latestMaxAge(w)), source)
	windowRates(h, w)
	return run(&Input{Host: h, Window: w}, notes)
}

// CheckRecording diagnoses a recording: the instant rules on its last
// complete state, the trend rules on the window.
func CheckRecording(latest *sample.Scrape, w *sample.Window, source string, notes []sample.Note) *Report {
	h := Analyze(latest, source)
	windowRates(h, w)
	return run(&Input{Host: h, Window: w}, notes)
}

func run(in *Input, notes []sample.Note) *Report {
	h := in.Host
	findings, ruleNotes, cov := RunCovered(in, Rules())
	all := append(append([]sample.Note{}, notes...), ruleNotes...)
	for _, n := range notes {
		if unread(n) {
			cov.Partial = true
			cov.Unread = append(cov.Unread, n.Source+": "+n.Message)
		}
	}
	if findings == nil {
		findings = []Finding{}
	}
	if h.Processes == nil {
		h.Processes = []Process{}
	}
	if d := h.Watermarks.BootDeficitPages; d > 0 {
		all = append(all, sample.Note{Source: "proc/zoneinfo",
			Message: fmt.Sprintf("the kernel's watermarks were computed when %d fewer pages (%s) were managed: at boot, before the initramfs and init memory were freed; "+
				"the kernel recomputes them only when min_free_kbytes, watermark_scale_factor or lowmem_reserve_ratio is written, and the table shows what it would set then "+
				"(sysctl -w vm.min_free_kbytes=$(cat /proc/sys/vm/min_free_kbytes) applies it)", d, human.Bytes(d*int64(h.Info.PageSize))),
			Hides: "nothing: the recomputation matches the kernel's with those pages"})
	} else if len(h.Watermarks.Mismatches) > 0 {
		all = append(all, sample.Note{Source: "proc/zoneinfo",
			Message: "the kernel's watermarks differ from the recomputation (kernel patches, memory hotplug or managed pages changing while reading)",
			Hides:   "the exactness of the what-if table"})
	}
	return &Report{SchemaVersion: SchemaVersion, Host: h, Findings: findings, Notes: all, Coverage: cov}
}

// unread says whether a note from reading the data means part of the host
// could not be seen. Notes on language runtimes only say which optional
// metrics are not exposed: the rules that need them are listed as not
// evaluated instead.
func unread(n sample.Note) bool {
	return !strings.HasPrefix(n.Source, "rule") && !strings.HasPrefix(n.Source, "runtime")
}

// latestMaxAge is how old a series' last point may be and still count as
// the current state: three steps (a process that exited earlier is gone).
func latestMaxAge(w *sample.Window) time.Duration {
	if w.Step > 0 {
		return 3 * w.Step
	}
	return 3 * time.Minute
}
