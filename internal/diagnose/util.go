package diagnose

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

func ev(name string, v float64, unit string) model.Evidence {
	return model.Evidence{Name: name, Value: v, Unit: unit}
}

func evText(name, text string) model.Evidence { return model.Evidence{Name: name, Text: text} }

// preloadGiven tailors the advice to run memdoctor's preload library: the
// processes that already map it are named as such (their stats were not
// read, and a note on each says why), and the advice is for the others.
func preloadGiven(in *Input, how string) string {
	if in.Host == nil {
		return how
	}
	var who []string
	for _, p := range in.Host.Processes {
		if p.Preload && p.Malloc == nil {
			who = append(who, fmt.Sprintf("%s (pid %d)", p.Comm, p.PID))
		}
	}
	if len(who) == 0 {
		return how
	}
	verb, its := "runs", "its stats were not read: the note on it says why"
	if len(who) > 1 {
		verb, its = "run", "their stats were not read: the note on each says why"
	}
	return fmt.Sprintf("%s already %s memdoctor's preload library, but %s; for any other process: %s",
		strings.Join(who, ", "), verb, its, how)
}

func lastValue(s *sample.Series) float64 {
	if s == nil {
		return 0
	}
	if p, ok := s.Last(); ok {
		return p.V
	}
	return 0
}

func spanText(ps []sample.Point) string {
	if len(ps) < 2 {
		return "no time"
	}
	return format.Duration(time.Duration(ps[len(ps)-1].T-ps[0].T) * time.Millisecond)
}

// subject names the instance when the window has one.
func subject(w *sample.Window, what string) string {
	if w != nil && w.Instance != "" {
		return w.Instance + " " + what
	}
	return what
}

func plural(n float64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%.0f %s", n, many)
}

// runtimeRunbook is the runbook of a language runtime's alert: the
// runtime is read on the host, not from Prometheus.
func runtimeRunbook(rule string) string {
	return "memdoctor check   # on the host; see the " + rule + " finding"
}

// glibcMalloc reports whether glibc's malloc serves p, or nothing says
// otherwise (a capture, a recording): glibc's figures and remedies (trim,
// arenas, another allocator) are not for a process that runs jemalloc,
// tcmalloc or mimalloc.
func glibcMalloc(p model.Process) bool {
	return p.Allocator == "" || p.Allocator == "glibc"
}

// arenaCapTo is the arena cap the remedies offer.
const arenaCapTo = 4

// withoutRaisedCap drops the arena-cap remedy for a process already capped
// at or below the cap it offers: it would raise the cap, or change nothing.
func withoutRaisedCap(rs []model.Remedy, p model.Process) []model.Remedy {
	if p.ArenaMax == nil || *p.ArenaMax <= 0 || *p.ArenaMax > arenaCapTo {
		return rs
	}
	out := rs[:0:0]
	for _, r := range rs {
		if !strings.Contains(strings.Join(r.Commands, "\n"), "glibc.malloc.arena_max=") {
			out = append(out, r)
		}
	}
	return out
}

// psiEvidence gives the PSI stall shares over the span, and a clause for
// the summary; nothing when PSI was not recorded.
func psiEvidence(some, full *float64) ([]model.Evidence, string) {
	if some == nil {
		return nil, ""
	}
	out := []model.Evidence{ev("psi_memory_some_share_percent", *some, "percent")}
	clause := fmt.Sprintf("; tasks waited on memory %.1f%% of the time (PSI some", *some)
	if full != nil {
		out = append(out, ev("psi_memory_full_share_percent", *full, "percent"))
		clause += fmt.Sprintf("; every task at once %.1f%%", *full)
	}
	return out, clause + ")"
}

// runtimeSubject names a runtime target for a finding.
func runtimeSubject(r *model.Runtime) string {
	if r.PID > 0 && r.Comm != "" {
		s := r.Runtime + " process " + r.Comm + " (pid " + strconv.Itoa(r.PID) + ")"
		if u := r.URL(); u != "" {
			s += " at " + u
		}
		return s
	}
	return r.Runtime + " runtime at " + r.Target
}

// spanWords says what span a rate covers.
func spanWords(g *model.GCRates) string {
	return "over " + format.ClockSeconds(g.Seconds)
}

// dotnetVar names a .NET runtime variable with the prefix the runtime
// reads: COMPlus_ before .NET 6 (3.1 ignores DOTNET_), DOTNET_ from 6 on
// or when the version is unknown.
func dotnetVar(r *model.Runtime, name string) string {
	major, _, _ := strings.Cut(r.Version, ".")
	if n, err := strconv.Atoi(major); err == nil && n > 0 && n < 6 {
		return "COMPlus_" + name
	}
	return "DOTNET_" + name
}

// dotnetHardLimit describes a .NET runtime's heap hard limit when one is
// set ("" when none is known).
func dotnetHardLimit(r *model.Runtime) string {
	if r.HeapLimitBytes != nil && *r.HeapLimitBytes > 0 {
		return format.Bytes(int64(*r.HeapLimitBytes))
	}
	if p, ok := r.GCSettings["heap_hard_limit_percent"]; ok {
		return p + "% of its memory"
	}
	return ""
}

// heapsWords says how many GC heaps a .NET runtime has, when known.
func heapsWords(r *model.Runtime) string {
	if h, ok := r.GCSettings["heaps"]; ok {
		return h + " heaps"
	}
	return "a heap per core"
}
