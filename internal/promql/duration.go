package promql

import (
	"time"

	"github.com/prometheus/common/model"
)

// ParseDuration reads a duration as memdoctor's flags and test files take
// it: a Go duration ("90s", "1h30m", "1.5h", "-5m") or a Prometheus one,
// which also counts days, weeks and years ("30d", "2w", "1d12h"). Days
// are whole: "1.5d" is refused (write "36h").
func ParseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	d, err := model.ParseDuration(s)
	return time.Duration(d), err
}
