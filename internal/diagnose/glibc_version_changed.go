package diagnose

// glibc_version_changed: the C library changed during the recording.
//
// Mechanism (incident 5): an OS upgrade (Ubuntu 16.04 → 20.04, glibc 2.23 →
// 2.31) changed malloc's behaviour — tcache (2.26), arena reuse, mmap
// fallbacks — and a daemon's RSS grew 10x with no change of its own. When
// memory behaviour changes after an upgrade, the allocator is a suspect.
//
// Fires (info) when memdoctor_glibc_info's version differs between the
// start and the end of the window, naming both and when it changed.

import (
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

type glibcVersionChanged struct{}

func init() { register(glibcVersionChanged{}) }

func (glibcVersionChanged) Meta() Meta {
	return Meta{ID: "glibc_version_changed", Trend: true, Title: "C library changed during the recording",
		Needs:     []Need{{"memdoctor_glibc_info", "memdoctor's collector (reads the glibc banner)"}},
		Prefilter: &Prefilter{About: "the glibc versions seen in the range", Queries: glibcQueries, Score: glibcScore},
		Doc:       "the C library changed during the recording: a suspect for what changed since"}
}

func (glibcVersionChanged) Eval(in *Input) []model.Finding {
	w := in.Window
	if w == nil {
		return nil
	}
	type seen struct {
		version string
		first   int64
	}
	var vs []seen
	for _, s := range w.Select("memdoctor_glibc_info") {
		if len(s.Points) == 0 {
			continue
		}
		vs = append(vs, seen{s.Labels.Get("version"), s.Points[0].T})
	}
	if len(vs) < 2 {
		return nil
	}
	first, last := vs[0], vs[0]
	for _, v := range vs {
		if v.first < first.first {
			first = v
		}
		if v.first > last.first {
			last = v
		}
	}
	if first.version == last.version {
		return nil
	}
	when := spanText([]sample.Point{{T: w.From.UnixMilli()}, {T: last.first}})
	return []model.Finding{{ID: "glibc_version_changed", Severity: model.Info, Subject: subject(w, "host"),
		Summary: fmt.Sprintf("glibc changed from %s to %s (%s into the window): a suspect for any change in processes' memory since",
			first.version, last.version, when),
		Evidence: []model.Evidence{evText("glibc_before", first.version), evText("glibc_after", last.version)},
		Remedies: []model.Remedy{{Title: "compare memory before and after the upgrade; check the allocator's view of the processes that grew (PID: one of them)",
			Commands: []string{"memdoctor diagnose --from SRC --until " + time.UnixMilli(last.first).UTC().Format(time.RFC3339), "memdoctor malloc PID"},
			Risk:     "none (read-only; malloc pauses the process briefly)"}},
	}}
}

// glibcQueries: how many glibc versions an instance showed in the range,
// when more than one.
func glibcQueries(a PrefilterArgs) []PromQuery {
	return []PromQuery{{"versions", "count by (instance) (count by (instance, version) (last_over_time(" +
		sel("memdoctor_glibc_info", a.Match) + "[" + a.Window() + "]))) > 1"}}
}

// glibcScore: a second version is the threshold.
func glibcScore(v PrefilterValues) float64 { return max(0, v.V("versions")-1) }
