package rightsize

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

const mib = 1 << 20

// steps makes a day of hourly samples; f gives sample i's memory.stat.
func steps(n int, f func(i int) map[string]int64) []Step {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Step, n)
	for i := range out {
		st := f(i)
		usage := st["anon"] + st["file"] + st["kernel"]
		out[i] = Step{T: t0.Add(time.Duration(i) * time.Hour), M: model.OOMMemoryOf(st, usage, nil),
			MappedBytes: math.NaN(), RefaultPages: math.NaN(), PressureSeconds: math.NaN(), HeapUsedBytes: math.NaN()}
	}
	return out
}

func TestRecommendRefusesTooLittleData(t *testing.T) {
	c := &Container{Name: "short", Steps: steps(5, func(int) map[string]int64 { return map[string]int64{"anon": 100 * mib} })}
	r := Recommend(c, Options{MinRange: 24 * time.Hour})
	if !strings.HasPrefix(r.Refused, "too little data") || r.LimitBytes != 0 {
		t.Errorf("5 hourly samples: refused %q, limit %d; want a refusal for too little data and no limit", r.Refused, r.LimitBytes)
	}
}

// A steady anon part with a big page cache is sized by the anon part, and
// the common rule (working set + 15 %) is judged wasteful.
func TestRecommendPageCacheHeavy(t *testing.T) {
	c := &Container{Name: "reader", Steps: steps(48, func(i int) map[string]int64 {
		return map[string]int64{"anon": 40*mib + int64(i%3)*mib, "file": 900 * mib, "active_file": 500 * mib, "inactive_file": 400 * mib, "kernel": 4 * mib}
	})}
	r := Recommend(c, Options{MinRange: 24 * time.Hour})
	if r.Refused != "" {
		t.Fatalf("refused: %s", r.Refused)
	}
	if r.LimitBytes > 200*mib || r.LimitBytes < r.UnreclaimableMaxBytes {
		t.Errorf("limit %d MiB, want between the unreclaimable peak %d MiB and 200 MiB (the cache is not need)", r.LimitBytes/mib, r.UnreclaimableMaxBytes/mib)
	}
	if r.Common.Verdict != VerdictWaste || r.Common.LimitBytes < 500*mib {
		t.Errorf("common rule: %+v, want waste at about working set 546 MiB × 1.15", r.Common)
	}
}

// Unreclaimable memory rising every quarter of the range is refused as a
// leak, with the finding.
func TestRecommendRefusesLeak(t *testing.T) {
	c := &Container{Name: "leaky", Steps: steps(48, func(i int) map[string]int64 {
		return map[string]int64{"anon": 100*mib + int64(i)*20*mib, "file": 10 * mib}
	})}
	r := Recommend(c, Options{MinRange: 24 * time.Hour})
	if !strings.HasPrefix(r.Refused, "leak:") || r.Leak == nil || r.LimitBytes != 0 {
		t.Errorf("refused %q leak %v limit %d, want a leak refusal with its finding and no limit", r.Refused, r.Leak, r.LimitBytes)
	}
	flat := &Container{Name: "flat", Steps: steps(48, func(i int) map[string]int64 {
		return map[string]int64{"anon": 100*mib + int64(i%2)*20*mib, "file": 10 * mib}
	})}
	if r := Recommend(flat, Options{MinRange: 24 * time.Hour}); r.Refused != "" {
		t.Errorf("a flat container that swings 20 MiB was refused: %s", r.Refused)
	}
}
