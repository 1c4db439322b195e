package source

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

const captures = "../../testdata/captures"

// memSink keeps what a source writes and checks the time order per
// instance, as the store does.
type memSink struct {
	mu        sync.Mutex
	t         *testing.T
	snapshots map[string][]*sample.Snapshot
	calls     int
}

func newMemSink(t *testing.T) *memSink {
	return &memSink{t: t, snapshots: map[string][]*sample.Snapshot{}}
}

func (m *memSink) sink(instance string, snapshots []*sample.Snapshot) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	for _, s := range snapshots {
		prev := m.snapshots[instance]
		if len(prev) > 0 && !s.Time.After(prev[len(prev)-1].Time) {
			m.t.Errorf("%s: scrape at %s after %s: out of order", instance, s.Time, prev[len(prev)-1].Time)
		}
		if s.Instance != instance {
			m.t.Errorf("scrape instance %q appended as %q", s.Instance, instance)
		}
		m.snapshots[instance] = append(m.snapshots[instance], s)
	}
	return nil
}

// series returns the values of one series of an instance over time.
func (m *memSink) series(instance, name string, match ...string) (ts []time.Time, vs []float64) {
	for _, s := range m.snapshots[instance] {
		if v, ok := s.Get(name, match...); ok {
			ts = append(ts, s.Time)
			vs = append(vs, v)
		}
	}
	return ts, vs
}

// slopePerDay is the least-squares slope of vs over ts, per day.
func slopePerDay(ts []time.Time, vs []float64) float64 {
	n := float64(len(ts))
	var sx, sy, sxx, sxy float64
	for i, t := range ts {
		x := t.Sub(ts[0]).Hours() / 24
		sx += x
		sy += vs[i]
		sxx += x * x
		sxy += x * vs[i]
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
