// Package format is the one set of formats for people, the same way
// everywhere: bytes, durations, values in their units and numbers, for the
// text output (render/text), the HTML report (render/html), findings'
// summaries, comparisons, probes and the commands' messages. It is a leaf:
// every floor may use it. A new format goes here, never into the package
// that prints it.
package format

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Bytes renders a byte count with binary units, three significant digits
// or so: 512 B, 1.50 KiB, 15.3 MiB, 312 GiB.
func Bytes(b int64) string {
	neg := b < 0
	if neg {
		b = -b
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(b)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	s := ""
	switch {
	case i == 0:
		s = fmt.Sprintf("%d B", b)
	case v >= 100:
		s = fmt.Sprintf("%.0f %s", v, units[i])
	case v >= 10:
		s = fmt.Sprintf("%.1f %s", v, units[i])
	default:
		s = fmt.Sprintf("%.2f %s", v, units[i])
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Span renders the length of a window: days with one decimal from two
// days on, else hours, minutes and seconds (36h0m0s).
func Span(d time.Duration) string {
	if d >= 48*time.Hour {
		return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + " days"
	}
	return Clock(d)
}

// Clock renders a duration exactly to the second, in hours, minutes and
// seconds whatever its length (44s, 12m30s, 240h0m0s).
func Clock(d time.Duration) string { return d.Round(time.Second).String() }

// ClockSeconds is Clock of a number of seconds.
func ClockSeconds(s float64) string { return Clock(time.Duration(s * float64(time.Second))) }

// MiB renders bytes in a fixed unit for columns to compare: MiB with one
// decimal, whole KiB below 1 MiB.
func MiB(v float64) string {
	if math.Abs(v) < 1<<20 {
		return fmt.Sprintf("%.0f KiB", v/1024)
	}
	return fmt.Sprintf("%.1f MiB", v/(1<<20))
}

// Millis renders a latency in a fixed unit for columns to compare:
// milliseconds with one decimal, whole microseconds below 1 ms.
func Millis(v float64) string {
	if math.Abs(v) < 0.001 {
		return fmt.Sprintf("%.0f µs", v*1e6)
	}
	return fmt.Sprintf("%.1f ms", v*1e3)
}

// Duration renders an elapsed time in findings: days with one decimal from
// two days on, hours and minutes from an hour on (5h12m0s), else seconds.
func Duration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + " days"
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	}
	return Clock(d)
}

// Count renders a count with its noun in the right number: "1 stall",
// "0 stalls", "3 stalls" (n is rounded to a whole number first).
func Count(n float64, one, many string) string {
	s := strconv.FormatFloat(n, 'f', 0, 64)
	if s == "1" || s == "-1" {
		return s + " " + one
	}
	return s + " " + many
}
