package runtimes

// A JVM's garbage collectors from its perf-data file: per-collector
// invocations and time (in high-resolution ticks), per-generation capacity
// and use, the cause of the current and of the last collection.
//
// Collectors are classed by their name: young (G1 young collection pauses,
// Copy, PSScavenge, ParNew, ZGC/Shenandoah minor), old (full collection
// pauses, MSC, PSParallelCompact, major), and G1's concurrent cycle pauses
// (remark and cleanup: two pauses per cycle, so invocations/2 old cycles).
// The heap is the sum of the generations (capacity: committed; used: in
// use), its limit the largest maxCapacity for G1 (each generation may grow
// to the whole heap) and the sum otherwise.

import (
	"fmt"
	"strconv"
	"strings"
)

// explicitCauses are the GC causes HotSpot records for collections asked
// for by code or tools rather than by allocation (gcCause.cpp).
var explicitCauses = map[string]bool{
	"System.gc()":                        true,
	"Diagnostic Command":                 true,
	"Heap Inspection Initiated GC":       true,
	"Heap Dump Initiated GC":             true,
	"JvmtiEnv ForceGarbageCollection":    true,
	"WhiteBox Initiated Young GC":        true,
	"WhiteBox Initiated Concurrent Mark": true,
	"WhiteBox Initiated Full GC":         true,
	"FullGCALot":                         true,
	"ScavengeAlot":                       true,
}

// ExplicitJVMCause says whether a HotSpot GC cause is an explicit or induced
// collection (System.gc(), jcmd GC.run, heap dumps and inspections, JVMTI).
func ExplicitJVMCause(c string) bool { return explicitCauses[c] }

// collectorClass classes a HotSpot collector by its perf-data name.
func collectorClass(name string) (gen string, perCycle float64) {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "concurrent cycle"):
		return Old, 2
	case strings.Contains(n, "full"), strings.Contains(n, "msc"), strings.Contains(n, "marksweep"),
		strings.Contains(n, "compact"), strings.Contains(n, "major"), strings.Contains(n, "old"):
		return Old, 1
	case strings.Contains(n, "young"), strings.Contains(n, "copy"), strings.Contains(n, "scavenge"),
		strings.Contains(n, "parnew"), strings.Contains(n, "minor"), strings.Contains(n, "incremental"):
		return Young, 1
	}
	return "", 0
}

// FromPerfData maps a perf-data file onto the normalised series. pid and
// comm identify the process (target "pid/N").
func FromPerfData(p *PerfData, pid int, comm string) (*Reading, error) {
	freq, ok := p.Int("sun.os.hrt.frequency")
	if !ok || freq <= 0 {
		return nil, fmt.Errorf("hsperfdata of pid %d: no sun.os.hrt.frequency (JVM still starting?)", pid)
	}
	r := &Reading{Target: "pid/" + strconv.Itoa(pid), Runtime: JVM, Source: "hsperfdata", PID: pid, Comm: comm,
		Version: p.Str("java.property.java.version")}
	var gcTicks float64
	counts := map[string]float64{}
	for i := 0; i < 16; i++ {
		pre := "sun.gc.collector." + strconv.Itoa(i) + "."
		inv, ok := p.Int(pre + "invocations")
		if !ok {
			continue
		}
		t, _ := p.Int(pre + "time")
		gcTicks += float64(t)
		gen, per := collectorClass(p.Str(pre + "name"))
		if gen == "" {
			continue
		}
		counts[gen] += float64(inv) / per
	}
	r.add(GCSeconds, gcTicks/float64(freq))
	for _, g := range []string{Young, Old} {
		r.add(Collections, counts[g], "generation", g)
	}
	var used, capacity, maxSum, maxMax float64
	for i := 0; i < 4; i++ {
		pre := "sun.gc.generation." + strconv.Itoa(i) + "."
		c, ok := p.Int(pre + "capacity")
		if !ok {
			continue
		}
		capacity += float64(c)
		if m, ok := p.Int(pre + "maxCapacity"); ok {
			maxSum += float64(m)
			maxMax = max(maxMax, float64(m))
		}
		spaces, _ := p.Int(pre + "spaces")
		for s := int64(0); s < spaces && s < 8; s++ {
			u, _ := p.Int(pre + "space." + strconv.FormatInt(s, 10) + ".used")
			used += float64(u)
		}
	}
	if capacity > 0 {
		r.add(HeapLive, used)
		r.add(HeapCommitted, capacity)
		if p.Str("sun.gc.policy.name") == "GarbageFirst" {
			r.add(HeapLimit, maxMax)
		} else if maxSum > 0 {
			r.add(HeapLimit, maxSum)
		}
	}
	if begin, ok := p.Int("sun.rt.createVmBeginTime"); ok && begin > 0 {
		r.add(StartTime, float64(begin)/1000)
	}
	if c := p.Str("sun.gc.lastCause"); c != "" && c != "No GC" {
		r.add(LastCause, 1, "cause", c)
	}
	return r, nil
}

// GCEvents is what a perf-data file says about the collections between two
// reads.
type GCEvents struct {
	// Invocations is the total collector invocations (all collectors).
	Invocations int64
	// Cause is the cause of the latest collection.
	Cause string
}

// PerfEvents extracts the total invocations and last cause, for a watcher
// that polls the file and attributes each new collection to its cause.
func PerfEvents(p *PerfData) GCEvents {
	var ev GCEvents
	for i := 0; i < 16; i++ {
		if inv, ok := p.Int("sun.gc.collector." + strconv.Itoa(i) + ".invocations"); ok {
			ev.Invocations += inv
		}
	}
	ev.Cause = p.Str("sun.gc.lastCause")
	return ev
}
