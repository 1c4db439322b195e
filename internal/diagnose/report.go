package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Data is what a diagnosis is made from. Latest is the host's most recent
// complete state (nil: taken from the end of Window); Earlier, when set, is
// an earlier reading of the same host a few seconds before Latest, whose
// runtime counters give the garbage collectors' recent rates (check
// --gc-interval); Window, when set, is every series over a time range (a
// recording, ingested history, a Prometheus query), on which the trend
// rules judge. At least one of Latest and Window is set.
type Data struct {
	Latest  *sample.Snapshot
	Earlier *sample.Snapshot
	Window  *sample.Window
	// Source names where the data came from (the report's host.source).
	Source string
	// Notes are what reading the data noted (what could not be read).
	Notes []sample.Note
}

// Run diagnoses the data: the host model of its latest state, every rule
// on it (the trend rules only when there is a window), and what was not
// evaluated. It is the one way in to diagnosis.
func Run(d Data) *model.Report {
	latest := d.Latest
	if latest == nil {
		latest = model.LatestSnapshot(d.Window, latestMaxAge(d.Window))
	}
	h := model.Analyze(latest, d.Source)
	if d.Earlier != nil {
		model.IntervalRates(h, d.Earlier)
	}
	model.WindowRates(h, d.Window)
	model.OOMRates(h, d.Window)
	return run(&Input{Host: h, Window: d.Window}, d.Notes)
}

func run(in *Input, notes []sample.Note) *model.Report {
	h := in.Host
	findings, ruleNotes, cov := evaluate(in, registrySet())
	// The rules' notes as they are when there are no others: they may be
	// the notes of rules missing their series that other reports share
	// (missingMemo), whose length is their capacity, so that appending
	// copies them; no one writes a report's notes in place. Copied for
	// each of 100,000 instances, they were a seventh of the bytes
	// diagnosing them allocated.
	all := ruleNotes
	if len(notes) > 0 {
		all = append(append(make([]sample.Note, 0, len(notes)+len(ruleNotes)+1), notes...), ruleNotes...)
	} else if all == nil {
		all = []sample.Note{}
	}
	for _, n := range notes {
		if unread(n) {
			cov.Partial = true
			cov.Unread = append(cov.Unread, n.Source+": "+n.Message)
		}
	}
	if findings == nil {
		findings = []model.Finding{}
	}
	if h.Processes == nil {
		h.Processes = []model.Process{}
	}
	if d := h.Watermarks.BootDeficitPages; d > 0 {
		all = append(all, sample.Note{Source: "proc/zoneinfo",
			Message: fmt.Sprintf("the kernel's watermarks were computed when %d fewer pages (%s) were managed: at boot, before the initramfs and init memory were freed; "+
				"the kernel recomputes them only when min_free_kbytes, watermark_scale_factor or lowmem_reserve_ratio is written, and the table shows what it would set then "+
				"(sysctl -w vm.min_free_kbytes=$(cat /proc/sys/vm/min_free_kbytes) applies it)", d, format.Bytes(d*int64(h.Info.PageSize))),
			Hides: "nothing: the recomputation matches the kernel's with those pages"})
	} else if len(h.Watermarks.Mismatches) > 0 {
		all = append(all, sample.Note{Source: "proc/zoneinfo",
			Message: "the kernel's watermarks differ from the recomputation (kernel patches, memory hotplug or managed pages changing while reading)",
			Hides:   "the exactness of the what-if table"})
	}
	return &model.Report{SchemaVersion: model.SchemaVersion, Host: h, Findings: findings, Notes: all, Coverage: cov}
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
