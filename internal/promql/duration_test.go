package promql

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * 24 * time.Hour, true},
		{"720h", 720 * time.Hour, true},
		{"1.5h", 90 * time.Minute, true},
		{"90s", 90 * time.Second, true},
		{"0", 0, true},
		{"-5m", -5 * time.Minute, true},
		{"2w", 14 * 24 * time.Hour, true},
		// Days with hours: a Prometheus duration (refused by the copies
		// that cut a trailing "d" off).
		{"1d12h", 36 * time.Hour, true},
		// Half a day is no whole day: refused, where a copy read "1.5d"
		// as one day and another as 36 hours.
		{"1.5d", 0, false},
		// Junk before the d: refused, where a copy read "3xd" as 3 days.
		{"3xd", 0, false},
		{"", 0, false},
		{"d", 0, false},
		{"-7d", 0, false},
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
}
