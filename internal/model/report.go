// Package model is memdoctor's stable JSON schema: the report that check
// and diagnose print with --json (the host model, findings, notes, coverage)
// and the types it is made of, and how the host model is built from samples
// (Analyze and the build*.go files) with the calculations the rules and the
// analyses share (windows, reclaim rates, daily peaks, baselines, scale
// factor). It never judges: that is internal/diagnose's job.
// Keys are only ever added within a SchemaVersion.
package model

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

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

var fromSRC = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`--from SRC( --since -(\S+))?`) })

// FitSource puts the data's own source in the report's commands: from is
// the --from argument, instance the instance to name (empty when the data
// holds only one).
func (r *Report) FitSource(from, instance string) {
	if len(r.Findings) == 0 {
		// Nothing to rewrite: quoting the names was a twentieth of
		// diagnosing 100,000 instances of one sample.
		return
	}
	arg := "--from " + ShellQuote(from)
	if instance != "" {
		arg += " --instance " + ShellQuote(instance)
	}
	r.rewrite(func(c string) string {
		return fromSRC().ReplaceAllStringFunc(c, func(m string) string {
			return strings.Replace(m, "--from SRC", arg, 1)
		})
	})
}

// FitPrometheus puts a Prometheus source in the report's commands: one
// instance through --prometheus and --match, a range as --range.
func (r *Report) FitPrometheus(url, instance string) {
	arg := "--prometheus " + ShellQuote(url) + " --match " + ShellQuote("{instance="+strconv.Quote(instance)+"}")
	r.rewrite(func(c string) string {
		return fromSRC().ReplaceAllStringFunc(c, func(m string) string {
			sub := fromSRC().FindStringSubmatch(m)
			if sub[2] != "" {
				return arg + " --range " + sub[2]
			}
			return arg
		})
	})
}

func (r *Report) rewrite(f func(string) string) {
	for i := range r.Findings {
		for j := range r.Findings[i].Remedies {
			cs := r.Findings[i].Remedies[j].Commands
			for k := range cs {
				cs[k] = f(cs[k])
			}
			ExplainUnprintable(r.Findings[i].Remedies[j : j+1])
		}
	}
}
