package diagnose

import (
	"strings"
)

// Rules write follow-up commands about the data they judged as
// "memdoctor diagnose --from SRC ...": SRC stands for the data, which a rule
// does not know. The command that made the report fills it in with one of
// these, so what is printed can be pasted as it stands.

// mallocHowTo is how the allocator rules' needs say to read a live
// process' allocator without the preload library.
const mallocHowTo = "or `memdoctor check --malloc` / `memdoctor malloc PID` (pauses it briefly)"

// scrapeHowTo is how the GC rules' needs say to get a runtime's metrics
// on a live check.
const scrapeHowTo = "`memdoctor check --scrape URL`"

// fitHowTo makes a missing-series fix fit the data it is printed for: a
// recording gets its runtimes' metrics from `record --scrape`, data read
// from Prometheus from the recorder that Prometheus scrapes.
func fitHowTo(how string, in *Input) string { return fitHowToKind(how, fitKind(in)) }

// Kinds of data a HowTo is fitted to.
const (
	fitSnapshot   = iota // no window: a live check or a capture
	fitPrometheus        // a window read from Prometheus
	fitRecording         // another window: a recording, saved files
)

// fitKind is the kind of data in is.
func fitKind(in *Input) int {
	switch {
	case in.Window == nil:
		return fitSnapshot
	case in.Host != nil && in.Host.Info.Source == "prometheus":
		return fitPrometheus
	}
	return fitRecording
}

// fitHowToKind is fitHowTo for the kind of data kind (fitKind).
func fitHowToKind(how string, kind int) string {
	if kind != fitSnapshot && strings.Contains(how, mallocHowTo) {
		// A recording cannot be paused into: it has the preload
		// library's stats, sampled by the recorder.
		how = strings.Replace(how, mallocHowTo, "`memdoctor record` then reads its stats at every sample", 1)
	}
	if !strings.Contains(how, scrapeHowTo) || kind == fitSnapshot {
		return how
	}
	if kind == fitPrometheus {
		return strings.Replace(how, scrapeHowTo, "`memdoctor record --scrape URL` on the host, its /metrics scraped by this Prometheus", 1)
	}
	return strings.Replace(how, scrapeHowTo, "`memdoctor record --scrape URL` (each sample scrapes it)", 1)
}
