package procfs

// Pressure stall information (kernel/sched/psi.c, psi_show), 4.20+:
// /proc/pressure/{memory,io,cpu,irq} and cgroup v2 <controller>.pressure:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// avgN are percentages of wall time over 10/60/300 s windows; total is the
// cumulative stall time in microseconds. The cpu file has a "full" line
// since 5.13 (all zeros at system level). With CONFIG_PSI_DEFAULT_DISABLED
// and no psi=1 the files are absent or fail with EOPNOTSUPP. Unknown
// "word key=value ..." lines and unknown keys are skipped so a newer kernel
// still parses; anything else is malformed.

import (
	"math"
	"strconv"
	"strings"
)

// PressureMemory reads proc/pressure/memory.
func (f FS) PressureMemory() (PSI, error) {
	return parseOnce(f, "proc/pressure/memory", func(data []byte) (PSI, error) {
		return ParsePSI(data, "proc/pressure/memory")
	})
}

// ParsePSI parses a pressure file; file names it in errors.
func ParsePSI(data []byte, file string) (PSI, error) {
	s := string(data)
	var psi PSI
	hasSome := false
	for line, t := range lines(s) {
		t = trimSpace(t)
		kind, rest := nextField(t)
		var dst *PSILine
		switch kind {
		case "some":
			dst, hasSome = &psi.Some, true
		case "full":
			dst, psi.HasFull = &psi.Full, true
		}
		l, err := parsePSILine(rest, dst != nil)
		if err != "" {
			return PSI{}, perr(file, line, "%s: %s", quote(t), err)
		}
		if dst != nil {
			*dst = l
		}
	}
	if !hasSome {
		return PSI{}, perr(file, 0, "no \"some\" line")
	}
	return psi, nil
}

// parsePSILine parses "avg10=0.00 avg60=0.00 avg300=0.00 total=0"; it
// returns a reason when the text is malformed. need requires all four keys.
func parsePSILine(s string, need bool) (PSILine, string) {
	var l PSILine
	const (
		a10 = 1 << iota
		a60
		a300
		tot
		all = a10 | a60 | a300 | tot
	)
	seen := 0
	for {
		var f string
		f, s = nextField(s)
		if f == "" {
			break
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return PSILine{}, "field " + quote(f) + " is not key=value"
		}
		switch k {
		case "avg10", "avg60", "avg300":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || v[0] < '0' || v[0] > '9' {
				return PSILine{}, k + " is not a percentage"
			}
			switch k {
			case "avg10":
				l.Avg10, seen = x, seen|a10
			case "avg60":
				l.Avg60, seen = x, seen|a60
			default:
				l.Avg300, seen = x, seen|a300
			}
		case "total":
			n, ok := atoi(v)
			if !ok {
				return PSILine{}, "total is not an integer"
			}
			l.TotalMicros, seen = n, seen|tot
		}
	}
	if need && seen != all {
		return PSILine{}, "want avg10, avg60, avg300 and total"
	}
	return l, ""
}
