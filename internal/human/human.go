// Package human formats quantities for people, the same way everywhere:
// the text report, the HTML report, findings' summaries, comparisons and
// the commands' messages.
package human

import (
	"fmt"
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
	return d.Round(time.Second).String()
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
	return d.Round(time.Second).String()
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
