package dotnet

import "testing"

// TestRundownBufferFor: the rundown asks at most a quarter of what the
// target's cgroup may still be charged, within its bounds, and nothing
// when that leaves under the least buffer.
func TestRundownBufferFor(t *testing.T) {
	for _, c := range []struct {
		headroom int64
		limited  bool
		mb       uint32
		ok       bool
	}{
		{0, false, rundownBufferMB, true},
		{1 << 40, true, rundownBufferMB, true},
		{100 << 20, true, 25, true},
		{16 << 20, true, 4, true},
		{15 << 20, true, 0, false},
		{0, true, 0, false},
	} {
		mb, ok := RundownBufferFor(c.headroom, c.limited)
		if mb != c.mb || ok != c.ok {
			t.Errorf("RundownBufferFor(%d, %v) = %d, %v; want %d, %v", c.headroom, c.limited, mb, ok, c.mb, c.ok)
		}
	}
}
