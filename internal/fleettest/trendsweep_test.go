package fleettest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
)

// sweepFleets are the fleets of the trend sweep: three seeds, the data
// ending at four hours of the day (the daily cycle cut at other phases).
func sweepFleets(hosts int) []Options {
	var out []Options
	for seed := uint64(1); seed <= 3; seed++ {
		for _, hm := range [][2]int{{0, 0}, {2, 30}, {12, 0}, {19, 0}} {
			out = append(out, Options{Seed: seed, Hosts: hosts, Days: 15, Interval: 5 * time.Minute,
				End: time.Date(2026, 11, 27, hm[0], hm[1], 0, 0, time.UTC)})
		}
	}
	return out
}

// TestTrendSweep measures both sides of the trend rules just past the
// warm-up, over twelve fleets (sweepFleets). Specificity: the healthy
// hosts of 10,000-host fleets booted 3 to 7 days before the end (3,732);
// none may be named by a trend rule or a rule the manifest speaks for.
// Sensitivity: 10 healthy hosts of each fleet (120) rebooted 3.5 days
// before the end with a leak since the boot of x % of memory a day;
// available_memory_decline must name at least the counts below, which are
// those measured when the trend had to pass the threshold with 95 %
// confidence (fitTrend's Limit). A drop of 0.5 % a day, 1.75 % over the
// boot, is under the rule's 2 % and is not asked for. Before that, on the
// fitted drop alone, 9 of the 3,732 were named, and the leaks on 37, 111,
// 119, 120 and 120 of 120 hosts.
//
// Run with -v to read the figures.
func TestTrendSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("twelve fleets of 10,000 hosts")
	}
	trend := trendRules()
	var judged, flagged atomic.Int64
	t.Run("healthy", func(t *testing.T) {
		for _, o := range sweepFleets(10000) {
			t.Run(fmt.Sprintf("seed%d-%s", o.Seed, o.End.Format("1504")), func(t *testing.T) {
				t.Parallel() // each plans and judges its own fleet
				judgeHealthyRebooted(o, 7*24*time.Hour, trend, &judged, &flagged, func(_ int, h *Host, age time.Duration, fd model.Finding) {
					t.Errorf("%s (booted %.2f days before the end): %s %s: %s", h.Instance, age.Hours()/24, fd.ID, fd.Severity, fd.Summary)
				})
			})
		}
	})
	t.Logf("healthy hosts booted 3 to 7 days before the end: %d of %d named", flagged.Load(), judged.Load())
	if judged.Load() < 3000 {
		t.Errorf("only %d healthy hosts booted 3 to 7 days before the end", judged.Load())
	}

	for _, c := range []struct {
		share    float64 // of MemTotal a day
		min      int     // hosts of 120 named at least
		minWarn  int     // of them at warning or worse
		describe string
	}{
		{0.01, 85, 11, "3.5 % over the boot"},
		{0.015, 119, 79, "5.25 %"},
		{0.02, 120, 119, "7 %"},
		{0.03, 120, 120, "10.5 %"},
	} {
		var mu sync.Mutex
		named, warned, tried := 0, 0, 0
		t.Run(fmt.Sprintf("leak%.1f", 100*c.share), func(t *testing.T) {
			for _, o := range sweepFleets(200) {
				t.Run(fmt.Sprintf("seed%d-%s", o.Seed, o.End.Format("1504")), func(t *testing.T) {
					t.Parallel()
					f := Plan(o)
					n := 0
					for i, h := range f.Hosts {
						if len(h.Pathologies) > 0 || n == 10 {
							continue
						}
						n++
						rep := diagnose.Run(diagnose.Data{Window: leakSinceBoot(f, i, 84*time.Hour, c.share), Source: "fleettest"})
						mu.Lock()
						tried++
						for _, fd := range rep.Findings {
							if fd.ID == "available_memory_decline" {
								named++
								if fd.Severity != model.Info {
									warned++
								}
							}
						}
						mu.Unlock()
					}
				})
			}
		})
		t.Logf("leak of %.1f %% of memory a day (%s), 3.5 days after the boot: named on %d of %d hosts, %d at warning or worse", 100*c.share, c.describe, named, tried, warned)
		if tried != 120 || named < c.min || warned < c.minWarn {
			t.Errorf("leak of %.1f %% a day: named on %d of %d hosts (%d at warning or worse), want at least %d of 120 (%d)", 100*c.share, named, tried, warned, c.min, c.minWarn)
		}
	}
}
