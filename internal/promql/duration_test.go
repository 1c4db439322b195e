package promql

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
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

// promDurationCases seed the comparison with Prometheus' reader.
var promDurationCases = []string{
	"0", "", "1ms", "1s", "1m", "1h", "1d", "1w", "1y", "1y2w3d4h5m6s7ms", "30d", "1d12h", "90s",
	"1m5ms", "5ms1m", "1h1h", "1hm", "1d1y", "00d", "007s", "1.5d", "-7d", "+1d", "1", "d", "1 d",
	"1D", "1µs", "1us", "1ns", "292y", "293y", "106751d", "106752d", "9223372036854775807ms",
	"9223372036854775808ms", "18446744073709551615ms", "18446744073709551616ms", "99999999999999999999y",
	"15250w", "15251w", "5124095h", "0s", "0y0ms",
}

// TestPromDurationMatchesPrometheus holds parsePromDuration to Prometheus'
// own reader, linked into this test only: the same strings accepted, to
// the same durations.
func TestPromDurationMatchesPrometheus(t *testing.T) {
	accepted := 0
	for _, s := range promDurationCases {
		if comparePromDuration(t, s) {
			accepted++
		}
	}
	if accepted < 15 || accepted > len(promDurationCases)-15 {
		t.Errorf("%d of %d accepted: the cases no longer cover both sides", accepted, len(promDurationCases))
	}
}

func comparePromDuration(t *testing.T, s string) bool {
	t.Helper()
	got, err := parsePromDuration(s)
	want, wantErr := model.ParseDuration(s)
	if (err == nil) != (wantErr == nil) || (err == nil && got != time.Duration(want)) {
		t.Errorf("parsePromDuration(%q) = %v, %v; Prometheus: %v, %v", s, got, err, time.Duration(want), wantErr)
	}
	return err == nil
}

func FuzzPromDuration(f *testing.F) {
	for _, s := range promDurationCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { comparePromDuration(t, s) })
}
