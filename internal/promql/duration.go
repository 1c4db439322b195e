package promql

import (
	"errors"
	"fmt"
	"time"
)

// ParseDuration reads a duration as memdoctor's flags and test files take
// it: a Go duration ("90s", "1h30m", "1.5h", "-5m") or a Prometheus one,
// which also counts days, weeks and years ("30d", "2w", "1d12h"). Days
// are whole: "1.5d" is refused (write "36h").
func ParseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	return parsePromDuration(s)
}

// promUnits are the units of a Prometheus duration, largest first: each
// may appear once, in this order. A year is 365 days.
var promUnits = []struct {
	name string
	d    time.Duration
}{
	{"y", 365 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour},
	{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond},
}

// parsePromDuration reads a duration as PromQL writes one: whole numbers
// each followed by a unit, "1w2d", or "0" alone. It accepts what
// Prometheus' own reader (prometheus/common/model.ParseDuration) accepts,
// to the same value.
func parsePromDuration(s string) (time.Duration, error) {
	switch s {
	case "0":
		return 0, nil
	case "":
		return 0, errors.New("empty duration")
	}
	var total uint64
	next := 0 // index into promUnits of the first unit still allowed
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && isDigit(rest[i]) {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("duration %q: want a whole number before each unit, as in 30d or 1w2d", s)
		}
		var n uint64
		for _, c := range rest[:i] {
			if n > (1<<64-1-9)/10 {
				return 0, fmt.Errorf("duration %q: out of range", s)
			}
			n = n*10 + uint64(c-'0')
		}
		rest = rest[i:]
		j := 0
		for j < len(rest) && !isDigit(rest[j]) {
			j++
		}
		unit := rest[:j]
		rest = rest[j:]
		if unit == "" {
			return 0, fmt.Errorf("duration %q: a number without its unit (y, w, d, h, m, s or ms)", s)
		}
		k := next
		for k < len(promUnits) && promUnits[k].name != unit {
			k++
		}
		if k == len(promUnits) {
			for _, u := range promUnits[:next] {
				if u.name == unit {
					return 0, fmt.Errorf("duration %q: units go from the largest to the smallest, each once", s)
				}
			}
			return 0, fmt.Errorf("duration %q: unknown unit %q (want y, w, d, h, m, s or ms)", s, unit)
		}
		next = k + 1
		mult := uint64(promUnits[k].d)
		if n > (1<<63)/mult {
			return 0, fmt.Errorf("duration %q: out of range", s)
		}
		total += n * mult
		if total > 1<<63-1 {
			return 0, fmt.Errorf("duration %q: out of range", s)
		}
	}
	return time.Duration(total), nil
}
