package safeio

import (
	"runtime"
	"testing"
)

// A proc file says it is empty; ReadFile allocates about what it returns,
// not a page for a line nor a buffer doubled up to a process' smaps, and
// the copy it returns is the caller's.
func TestReadFileAllocatesWhatItReturns(t *testing.T) {
	for _, path := range []string{"/proc/self/stat", "/proc/self/smaps"} {
		first, err := ReadFile(path, 64<<20) // warms the reused buffer
		if err != nil {
			t.Fatal(err)
		}
		const n = 20
		var before, after runtime.MemStats
		var got int
		runtime.ReadMemStats(&before)
		for range n {
			b, err := ReadFile(path, 64<<20)
			if err != nil {
				t.Fatal(err)
			}
			got += len(b)
		}
		runtime.ReadMemStats(&after)
		per, size := (after.TotalAlloc-before.TotalAlloc)/n, uint64(got/n)
		t.Logf("%s: %d bytes allocated a read of %d bytes", path, per, size)
		if per > size+size/4+1024 {
			t.Errorf("%s: %d bytes allocated a read of %d bytes", path, per, size)
		}
		if len(first) == 0 || cap(first) > len(first)+len(first)/4+64 {
			t.Errorf("%s: returned %d bytes in a buffer of %d", path, len(first), cap(first))
		}
	}
	// The returned bytes are not the next read's.
	a, err := ReadFile("/proc/self/stat", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	keep := string(a)
	for i := range a {
		a[i] = 'x'
	}
	b, err := ReadFile("/proc/self/stat", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[0] == 'x' || keep[0] != b[0] {
		t.Errorf("a second read %q after the first's bytes were overwritten (first %q)", b, keep)
	}
}
