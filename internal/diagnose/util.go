package diagnose

import (
	"fmt"
	"sort"
)

// SortFindings orders findings most severe first, then by id.
func SortFindings(fs []Finding) { sortFindings(fs) }

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if a, b := fs[i].Severity.Rank(), fs[j].Severity.Rank(); a != b {
			return a > b
		}
		return fs[i].ID < fs[j].ID
	})
}

// HumanBytes renders a byte count with binary units: 1.5 GiB.
func HumanBytes(b int64) string {
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
		return "-" + s
	}
	return s
}

func ev(name string, v float64, unit string) Evidence {
	return Evidence{Name: name, Value: v, Unit: unit}
}

func evText(name, text string) Evidence { return Evidence{Name: name, Text: text} }
