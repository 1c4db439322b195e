package promql

import (
	"fmt"
	"strings"
	"time"
)

// Duration writes d as a PromQL duration in whole seconds.
func Duration(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(d/time.Second))
}

// SumIncrease is the increase of each named counter over window, each kept
// apart by a memdoctor_counter label (increase drops the metric name, and
// series that then share labels cannot be summed), ready for
// sum without (memdoctor_counter).
func SumIncrease(names []string, match, window string) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf(`  label_replace(increase(%s[%s]), "memdoctor_counter", %q, "", "")`, Selector(n, match), window, n))
	}
	return strings.Join(parts, "\nor\n")
}
