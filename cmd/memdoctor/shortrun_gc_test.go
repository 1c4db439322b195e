package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gogc is the runtime's GOGC now.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// check's first collection waits for 16 MiB of heap (GOGC=400); after it
// the runtime collects at 100 % again, so a host with a large live heap
// does not keep five times it.
func TestShortRunGCReturnsToDefault(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	shortRunGC()
	if p := gogc(); p != 400 {
		t.Fatalf("GOGC %d before the first collection, want 400", p)
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for gogc() != 100 && time.Now().Before(deadline) {
		runtime.GC() // the cleanup runs after a cycle that found its object unreachable
		time.Sleep(10 * time.Millisecond)
	}
	if p := gogc(); p != 100 {
		t.Errorf("GOGC %d after a collection, want 100", p)
	}
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	shortRunGC()
	if p := gogc(); p != 50 {
		t.Errorf("GOGC=50 in the environment: %d, want 50", p)
	}
}
