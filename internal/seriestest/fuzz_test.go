package seriestest

import (
	"errors"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"interval 1m\nm 1 2 3",
		"start 2026-03-01T12:00:00Z\ninstance h\ninterval 15m\na 8e9-1e6x3\nb _ 1e9+4e6x2 # c",
		"interval 1d12h\nm{a=\"x y\",b=\"#\\\"\\n\\\\\"} 100+50x2 _x1 2+0x1 Inf -Inf NaN",
		"interval 1m\nnoise m 5e9+0x9 seed=3 sd=1e7\ninterval 2m\nn 1x3",
		"interval 250ms\nm 1e-3+2E+0x1 -1.5e+1 .5 1.\r\n",
		"interval 1m\nm 1+-2x3",
		"interval 1m\na 1\na 2",
		"start 0001-01-01T00:00:00Z\ninterval 2562047h\nm 1x100",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		w, err := Parse(src)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v is not an *Error with a line", err)
			}
			return
		}
		if w.To.Before(w.From) {
			t.Fatalf("To %v before From %v", w.To, w.From)
		}
		total := 0
		for _, s := range w.Series {
			total += len(s.Points)
			for i, p := range s.Points {
				if i > 0 && p.T <= s.Points[i-1].T {
					t.Fatalf("%s: point times not increasing at %d: %d after %d", s.Key(), i, p.T, s.Points[i-1].T)
				}
				if p.T < w.From.UnixMilli() || p.T > w.To.UnixMilli() {
					t.Fatalf("%s: point %d outside [From, To]", s.Key(), p.T)
				}
			}
		}
		if total > MaxSamples {
			t.Fatalf("%d samples, over the limit", total)
		}
	})
}
