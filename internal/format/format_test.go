package format

import (
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{
		0:                  "0 B",
		1023:               "1023 B",
		1536:               "1.50 KiB",
		15 << 20:           "15.0 MiB",
		312 << 30:          "312 GiB",
		-(3 << 30) / 2:     "-1.50 GiB",
		5 << 50:            "5.00 PiB",
		2048 << 50:         "2048 PiB",
		10*(1<<20) + 1<<19: "10.5 MiB",
		999*(1<<10) + 1<<9: "1000 KiB",
		1<<10*1024 - 1<<10: "1023 KiB",
	} {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestSpan(t *testing.T) {
	t.Parallel()
	for in, want := range map[time.Duration]string{
		90 * time.Second:                    "1m30s",
		36*time.Hour + 400*time.Millisecond: "36h0m0s",
		48 * time.Hour:                      "2.0 days",
		14*24*time.Hour - 30*time.Minute:    "14.0 days",
		10*24*time.Hour + 12*time.Hour:      "10.5 days",
	} {
		if got := Span(in); got != want {
			t.Errorf("Span(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[time.Duration]string{
		42*time.Second + 300*time.Millisecond:         "42s",
		5*time.Hour + 12*time.Minute + 31*time.Second: "5h13m0s",
		47 * time.Hour:               "47h0m0s",
		3*24*time.Hour + 6*time.Hour: "3.2 days",
	} {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestClockAndFixedUnits(t *testing.T) {
	t.Parallel()
	for in, want := range map[time.Duration]string{
		44 * time.Second:                    "44s",
		12*time.Minute + 30*time.Second:     "12m30s",
		240 * time.Hour:                     "240h0m0s",
		3*time.Hour + 1499*time.Millisecond: "3h0m1s",
	} {
		if got := Clock(in); got != want {
			t.Errorf("Clock(%v) = %q, want %q", in, got, want)
		}
	}
	if got := ClockSeconds(86400 * 10); got != "240h0m0s" {
		t.Errorf("ClockSeconds(10 days) = %q, want 240h0m0s", got)
	}
	for in, want := range map[float64]string{512 * 1024: "512 KiB", 3 << 20: "3.0 MiB", 1.25 * (1 << 30): "1280.0 MiB", -(1 << 19): "-512 KiB"} {
		if got := MiB(in); got != want {
			t.Errorf("MiB(%g) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0.0004: "400 µs", 0.0123: "12.3 ms", 2: "2000.0 ms"} {
		if got := Millis(in); got != want {
			t.Errorf("Millis(%g) = %q, want %q", in, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    float64
		want string
	}{{0, "0 stalls"}, {1, "1 stall"}, {0.6, "1 stall"}, {1.4, "1 stall"}, {2, "2 stalls"}, {1.5, "2 stalls"}, {-1, "-1 stall"}, {191, "191 stalls"}} {
		if got := Count(c.n, "stall", "stalls"); got != c.want {
			t.Errorf("Count(%v) = %q, want %q", c.n, got, c.want)
		}
	}
}
