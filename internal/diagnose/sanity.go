package diagnose

// Sanity of the meminfo series before any rule judges them. /proc/meminfo
// itself is checked by its parser, but series also come from OpenMetrics
// files, Prometheus answers and recordings, where anything can be written:
// a MemTotal of 0 or -5 kB, a value that wrapped past 2^64, MemAvailable
// above MemTotal, NaN. Such a host is not judged by the rules that read
// memory sizes: they say "not evaluated" and why, never a finding computed
// from a value that cannot be, and never "ok".

import (
	"fmt"
	"math"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// Reasons a rule was not evaluated, given in its note's message.
const (
	notEvaluatedMissing = "not evaluated: series "
	notEvaluatedInvalid = "not evaluated: impossible data: "
)

// memoryUsable reports whether rule id can judge the host's memory sizes;
// when it cannot, it notes why. needAvailable also asks for MemAvailable
// (or its estimate).
func memoryUsable(in *Input, id string, needAvailable bool) bool {
	h := in.Host
	if h == nil {
		return false
	}
	if bad := h.Accounting.Invalid; bad != "" {
		in.Note(id, notEvaluatedInvalid+bad, "fix the source of the data: /proc/meminfo never shows this")
		return false
	}
	if needAvailable && h.Accounting.AvailableMissing != "" {
		in.Note(id, notEvaluatedMissing+h.Accounting.AvailableMissing+" is missing",
			"read /proc/meminfo (node_exporter's meminfo collector exports MemAvailable)")
		return false
	}
	return true
}

// windowUsable checks the window series a trend rule reads as sizes: a
// point that cannot be (NaN, infinite, negative, beyond 8 EiB, or MemTotal
// 0) makes rule id not evaluated, with a note naming the series and the
// time. A trend fitted through such a point would be a guess.
func windowUsable(in *Input, id string, names ...string) bool {
	for _, name := range names {
		s := in.Window.Get(name)
		if s == nil {
			continue
		}
		for _, p := range s.Points {
			v := p.V
			bad := ""
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				bad = fmt.Sprint(v)
			case v < 0:
				bad = fmt.Sprintf("negative (%g)", v)
			case v >= model.MaxBytes:
				bad = fmt.Sprintf("%g, beyond 8 EiB (a value that wrapped)", v)
			case v == 0 && name == "node_memory_MemTotal_bytes":
				bad = "0"
			}
			if bad != "" {
				in.Note(id, fmt.Sprintf("%sseries %s is %s at %s", notEvaluatedInvalid, name, bad,
					time.UnixMilli(p.T).UTC().Format("2006-01-02 15:04:05 UTC")),
					"fix the source of the data: /proc/meminfo never shows this")
				return false
			}
		}
	}
	return true
}
