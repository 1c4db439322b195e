package model

import (
	"fmt"
	"math"
	"strings"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// MaxBytes is the largest size memdoctor believes: 2^63 bytes (8 EiB),
// beyond which int64 arithmetic wraps.
const MaxBytes = 1 << 63

// meminfoChecked are the meminfo series the accounting reads.
var meminfoChecked = []string{
	"MemTotal", "MemFree", "MemAvailable", "SwapTotal", "SwapFree", "AnonPages", "Active_file", "Inactive_file",
	"Shmem", "SReclaimable", "SUnreclaim", "KernelStack", "PageTables", "SecPageTables", "Percpu", "Hugetlb",
	"SwapCached", "VmallocUsed", "KReclaimable", "Zswap", "Hugepagesize",
}

// meminfoCheckedNames are meminfoChecked's series names, made once: made
// for each diagnosis they were a twentieth of the time of diagnosing
// 100,000 instances of one sample.
var meminfoCheckedNames = func() []string {
	out := make([]string, len(meminfoChecked))
	for i, k := range meminfoChecked {
		out[i] = "node_memory_" + k + "_bytes"
	}
	return out
}()

// meminfoInvalid names the first impossible meminfo value in s, or "".
func meminfoInvalid(s *sample.Snapshot) string {
	for _, name := range meminfoCheckedNames {
		v, ok := s.Get(name)
		if !ok {
			continue
		}
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Sprintf("series %s is %v", name, v)
		case v < 0:
			return fmt.Sprintf("series %s is negative (%g)", name, v)
		case v >= MaxBytes:
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
