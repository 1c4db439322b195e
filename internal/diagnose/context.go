package diagnose

import (
	"regexp"
	"strings"
)

// Rules write follow-up commands about the data they judged as
// "memdoctor diagnose --from SRC ...": SRC stands for the data, which a rule
// does not know. The command that made the report fills it in with one of
// these, so what is printed can be pasted as it stands.

var fromSRC = regexp.MustCompile(`--from SRC( --since -(\S+))?`)

// FitSource puts the data's own source in the report's commands: from is
// the --from argument, instance the instance to name (empty when the data
// holds only one).
func (r *Report) FitSource(from, instance string) {
	arg := "--from " + ShellQuote(from)
	if instance != "" {
		arg += " --instance " + ShellQuote(instance)
	}
	r.rewrite(func(c string) string {
		return fromSRC.ReplaceAllStringFunc(c, func(m string) string {
			return strings.Replace(m, "--from SRC", arg, 1)
		})
	})
}

// FitPrometheus puts a Prometheus source in the report's commands: one
// instance through --prometheus and --match, a range as --range.
func (r *Report) FitPrometheus(url, instance string) {
	arg := "--prometheus " + ShellQuote(url) + " --match " + ShellQuote(`{instance="`+instance+`"}`)
	r.rewrite(func(c string) string {
		return fromSRC.ReplaceAllStringFunc(c, func(m string) string {
			sub := fromSRC.FindStringSubmatch(m)
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
		}
	}
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune("-_./:=@,+", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// mallocHowTo is how the allocator rules' needs say to read a live
// process' allocator without the preload library.
const mallocHowTo = "or `memdoctor check --malloc` / `memdoctor malloc PID` (pauses it briefly)"

// scrapeHowTo is how the GC rules' needs say to get a runtime's metrics
// on a live check.
const scrapeHowTo = "`memdoctor check --scrape URL`"

// fitHowTo makes a missing-series fix fit the data it is printed for: a
// recording gets its runtimes' metrics from `record --scrape`, data read
// from Prometheus from the recorder that Prometheus scrapes.
func fitHowTo(how string, in *Input) string {
	if in.Window != nil && strings.Contains(how, mallocHowTo) {
		// A recording cannot be paused into: it has the preload
		// library's stats, sampled by the recorder.
		how = strings.Replace(how, mallocHowTo, "`memdoctor record` then reads its stats at every sample", 1)
	}
	if !strings.Contains(how, scrapeHowTo) || in.Window == nil {
		return how
	}
	if in.Host != nil && in.Host.Info.Source == "prometheus" {
		return strings.Replace(how, scrapeHowTo, "`memdoctor record --scrape URL` on the host, its /metrics scraped by this Prometheus", 1)
	}
	return strings.Replace(how, scrapeHowTo, "`memdoctor record --scrape URL` (each sample scrapes it)", 1)
}
