package format

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Value writes a value for people, in its unit (an evidence's unit names):
// bytes as KiB/MiB/GiB, durations as ms/s/minutes, rates "a day", counts as
// whole numbers, other numbers to three significant digits without
// exponents. JSON keeps the exact value; only the text and HTML reports use
// this.
func Value(v float64, unit string) string {
	switch unit {
	case "bytes":
		return Bytes(int64(math.Round(v)))
	case "bytes_per_day":
		return Bytes(int64(math.Round(v))) + " a day"
	case "kB":
		return Number(v) + " kB" // a sysctl's own unit, to paste
	case "percent":
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	case "per_day":
		return Number(v) + " a day"
	case "per_minute":
		return Number(v) + " a minute"
	case "per_second":
		return Number(v) + " a second"
	case "days":
		return strconv.FormatFloat(v, 'f', 1, 64) + " days"
	case "seconds":
		return Seconds(v)
	case "pages":
		return Number(v) + " pages"
	case "count":
		return Number(v)
	}
	return Number(v)
}

// Number writes a plain number without an exponent: whole numbers whole,
// others to three significant digits (two decimals at most from 1 up),
// very small ones (p-values) as "<0.001".
func Number(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'f', -1, 64)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
	case math.Abs(v) >= 0.001:
		return trimZeros(strconv.FormatFloat(v, 'f', 3, 64))
	case v > 0:
		return "<0.001"
	case v < 0:
		return ">-0.001"
	}
	return "0"
}

// Seconds writes a duration in seconds at a readable scale.
func Seconds(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0 s"
	case a < 0.001:
		return trimZeros(strconv.FormatFloat(v*1e6, 'f', 1, 64)) + " µs"
	case a < 1:
		return trimZeros(strconv.FormatFloat(v*1e3, 'f', 1, 64)) + " ms"
	case a < 120:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64)) + " s"
	}
	return Duration(time.Duration(v * float64(time.Second)))
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
