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
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// maxBytes is the largest size memdoctor believes: 2^63 bytes (8 EiB),
// beyond which int64 arithmetic wraps.
const maxBytes = 1 << 63

// meminfoChecked are the meminfo series the accounting reads.
var meminfoChecked = []string{
	"MemTotal", "MemFree", "MemAvailable", "SwapTotal", "SwapFree", "AnonPages", "Active_file", "Inactive_file",
	"Shmem", "SReclaimable", "SUnreclaim", "KernelStack", "PageTables", "SecPageTables", "Percpu", "Hugetlb",
	"SwapCached", "VmallocUsed", "KReclaimable", "Zswap", "Hugepagesize",
}

// meminfoInvalid names the first impossible meminfo value in s, or "".
func meminfoInvalid(s *sample.Snapshot) string {
	for _, k := range meminfoChecked {
		name := "node_memory_" + k + "_bytes"
		v, ok := s.Get(name)
		if !ok {
			continue
		}
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Sprintf("series %s is %v", name, v)
		case v < 0:
			return fmt.Sprintf("series %s is negative (%g)", name, v)
		case v >= maxBytes:
			return fmt.Sprintf("series %s is %g, beyond 8 EiB (a value that wrapped)", name, v)
		}
	}
	total, ok := s.Get("node_memory_MemTotal_bytes")
	if ok && total == 0 {
		return "series node_memory_MemTotal_bytes is 0"
	}
	for _, c := range [][2]string{{"MemFree", "MemTotal"}, {"MemAvailable", "MemTotal"}, {"SwapFree", "SwapTotal"}} {
		p, ok1 := s.Get("node_memory_" + c[0] + "_bytes")
		w, ok2 := s.Get("node_memory_" + c[1] + "_bytes")
		if ok1 && ok2 && p > w {
			return fmt.Sprintf("series node_memory_%s_bytes (%s) is above node_memory_%s_bytes (%s)",
				c[0], format.Bytes(int64(p)), c[1], format.Bytes(int64(w)))
		}
	}
	return ""
}

// availableMissing names the series MemAvailable is missing for: neither
// MemAvailable nor everything the pre-3.14 estimate adds up.
func availableMissing(s *sample.Snapshot) string {
	if s.Has("node_memory_MemAvailable_bytes") {
		return ""
	}
	var lack []string
	for _, k := range []string{"MemFree", "Active_file", "Inactive_file", "SReclaimable"} {
		if !s.Has("node_memory_" + k + "_bytes") {
			lack = append(lack, "node_memory_"+k+"_bytes")
		}
	}
	if len(lack) == 0 {
		return ""
	}
	return "node_memory_MemAvailable_bytes (or, before kernel 3.14, " + strings.Join(lack, ", ") + " to estimate it)"
}

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
			case v >= maxBytes:
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
