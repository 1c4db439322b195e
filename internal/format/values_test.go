package format_test

import (
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
)

// Evidence values as reports print them: in their unit, never as Go's raw
// float text (71.80891927083333, 1.00663296e+08).
func TestFormatValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    model.Evidence
		want string
	}{
		{model.Evidence{Name: "days_until_exhausted", Value: 71.80891927083333, Unit: "days"}, "71.8 days"},
		{model.Evidence{Name: "heap", Value: 1.00663296e+08}, "100663296"},
		{model.Evidence{Name: "heap", Value: 1.00663296e+08, Unit: "bytes"}, "96.0 MiB"},
		{model.Evidence{Name: "growth", Value: 4.0e9 / 7, Unit: "bytes_per_day"}, "545 MiB a day"},
		{model.Evidence{Name: "wakeups", Value: 960.4166666, Unit: "per_day"}, "960 a day"},
		{model.Evidence{Name: "induced", Value: 2.345678, Unit: "per_minute"}, "2.35 a minute"},
		{model.Evidence{Name: "gc", Value: 0.0123456, Unit: "seconds"}, "12.3 ms"},
		{model.Evidence{Name: "gc", Value: 3.14159, Unit: "seconds"}, "3.14 s"},
		{model.Evidence{Name: "p", Value: 1.2e-12}, "<0.001"},
		{model.Evidence{Name: "r", Value: 0.87654321, Unit: "ratio"}, "0.877"},
		{model.Evidence{Name: "used", Value: 97.123, Unit: "percent"}, "97.1%"},
		{model.Evidence{Name: "kills", Value: 3, Unit: "count"}, "3"},
		{model.Evidence{Name: "min_free_kbytes", Value: 67584, Unit: "kB"}, "67584 kB"},
		{model.Evidence{Name: "kernel", Text: "5.0.0-1-generic"}, "5.0.0-1-generic"},
	} {
		if got := c.e.Human(); got != c.want {
			t.Errorf("%s %v %s: %q, want %q", c.e.Name, c.e.Value, c.e.Unit, got, c.want)
		}
	}
}
