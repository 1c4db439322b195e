package history

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/prom"
)

const fleetFile = "../../../testdata/golden/fleet.om.gz"

// The step is decided here and nowhere else: stored history at the span
// over TargetPoints (raw under a second), Prometheus at least a minute,
// and a fleet scan given no step refuses rather than pick its own.
func TestStepDecidedOnce(t *testing.T) {
	t.Parallel()
	for span, want := range map[time.Duration]time.Duration{
		time.Hour:           0,                 // 0.9 s a point: raw samples
		14 * 24 * time.Hour: 302 * time.Second, // 302.4 s, rounded
		30 * 24 * time.Hour: 648 * time.Second,
	} {
		if got := Step(span); got != want {
			t.Errorf("Step(%v) = %v, want %v", span, got, want)
		}
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	w, err := PromWindow(now, "", "14d", "")
	if err != nil {
		t.Fatal(err)
	}
	if w.Step != 302*time.Second || w.Range() != 14*24*time.Hour || !w.To.Equal(now) {
		t.Errorf("PromWindow(14d) = %+v, want a 302s step over 14 days ending %v", w, now)
	}
	if w, err := PromWindow(now, "", "1d", ""); err != nil || w.Step != time.Minute {
		t.Errorf("PromWindow(1d) step = %v, %v; want the 1m floor", w.Step, err)
	}
	if w, err := PromWindow(now, "-1d", "1d", "5m"); err != nil || w.Step != 5*time.Minute || !w.To.Equal(now.Add(-24*time.Hour)) {
		t.Errorf("PromWindow(--until -1d --step 5m) = %+v, %v", w, err)
	}
	// A fleet scan reads its suspects at fewer points: 14 days every
	// 806 s (806.4, rounded), a day still at the 1m floor, and --step wins.
	if w, err := FleetWindow(now, "", "14d", ""); err != nil || w.Step != 806*time.Second || w.Range() != 14*24*time.Hour || !w.To.Equal(now) {
		t.Errorf("FleetWindow(14d) = %+v, %v; want an 806s step over 14 days ending %v", w, err, now)
	}
	if w, err := FleetWindow(now, "", "1d", ""); err != nil || w.Step != time.Minute {
		t.Errorf("FleetWindow(1d) step = %v, %v; want the 1m floor", w.Step, err)
	}
	if w, err := FleetWindow(now, "", "14d", "302s"); err != nil || w.Step != 302*time.Second {
		t.Errorf("FleetWindow(14d, --step 302s) step = %v, %v; want 302s", w.Step, err)
	}
	if _, err := FleetWindow(now, "", "14d", "0s"); err == nil || !strings.Contains(err.Error(), "--step") {
		t.Errorf("FleetWindow(--step 0s): %v, want it refused", err)
	}
	c, err := prom.New(prom.Options{URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Scan(context.Background(), c, fleet.Options{Range: time.Hour}); err == nil || !strings.Contains(err.Error(), "no step") {
		t.Errorf("fleet.Scan without a step: %v, want it refused", err)
	}
}

// Duration flags read days: --since -1d12h is 36 hours before the end.
func TestParseWhenDays(t *testing.T) {
	t.Parallel()
	end := time.Date(2020, 1, 10, 0, 0, 0, 0, time.UTC)
	if got, err := ParseWhen("-1d12h", end); err != nil || !got.Equal(end.Add(-36*time.Hour)) {
		t.Errorf("ParseWhen(-1d12h) = %v, %v; want %v", got, err, end.Add(-36*time.Hour))
	}
	if _, _, err := ParseRange("2020-01-09", "2020-01-08", end); err == nil || !strings.Contains(err.Error(), "inverted range") {
		t.Errorf("ParseRange(inverted) = %v, want an inverted range", err)
	}
}

func TestStoreWindowClipped(t *testing.T) {
	t.Parallel()
	first := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	last := first.Add(10 * 24 * time.Hour)
	w, err := StoreWindow(first, last, "2019-12-01", "-2d")
	if err != nil {
		t.Fatal(err)
	}
	if !w.From.Equal(first) || !w.To.Equal(last.Add(-48*time.Hour)) || w.Step != Step(8*24*time.Hour) {
		t.Errorf("StoreWindow = %+v, want %v … %v at %v", w, first, last.Add(-48*time.Hour), Step(8*24*time.Hour))
	}
	if _, err := StoreWindow(first, last, "2021-01-01", ""); err == nil || !strings.Contains(err.Error(), "holds no data") {
		t.Errorf("a range after the data: %v, want it to hold no data", err)
	}
}

// A file of several instances: each is diagnosed over its own window,
// the merged report holds every instance's findings, and the report page
// is the same diagnosis.
func TestDiagnoseSeveralInstances(t *testing.T) {
	t.Parallel()
	s, err := Open(fleetFile, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Instances) < 2 {
		t.Fatalf("%s: %d instances, want several", fleetFile, len(s.Instances))
	}
	d, err := Diagnose(s, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Instances) != len(s.Instances) || d.Source != fleetFile {
		t.Fatalf("diagnosis of %d instances from %q, want %d from %s", len(d.Instances), d.Source, len(s.Instances), fleetFile)
	}
	n := 0
	for _, r := range d.Instances {
		n += r.Findings
		if r.Step() != Step(r.To.Sub(r.From)) {
			t.Errorf("%s: step %v, want %v", r.Instance, r.Step(), Step(r.To.Sub(r.From)))
		}
	}
	if n == 0 || len(d.Findings) != n {
		t.Errorf("merged %d findings, the instances have %d (want some, all merged)", len(d.Findings), n)
	}
	rp, err := Page(s, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rp.Instances {
		if len(r.Report.Findings) != d.Instances[i].Findings || rp.Page.Instances[i].Window == nil {
			t.Errorf("%s: the page has %d findings, the diagnosis %d", r.Instance, len(r.Report.Findings), d.Instances[i].Findings)
		}
	}

	one, err := Open(fleetFile, s.Instances[1], false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if len(one.Instances) != 1 || one.Instances[0] != s.Instances[1] {
		t.Errorf("--instance %s: instances %v", s.Instances[1], one.Instances)
	}
	if _, err := Open(fleetFile, "nosuch:9100", false, nil); err == nil || !strings.Contains(err.Error(), s.Instances[0]) {
		t.Errorf("an unknown instance: %v, want an error listing the instances", err)
	}
}
