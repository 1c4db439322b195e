package dotnet

import (
	"encoding/binary"
	"fmt"
	"maps"
)

// The runtime's GC events (provider Microsoft-Windows-DotNETRuntime).
const (
	evGCStart          = 1
	evGCEnd            = 2
	evGCRestartEEEnd   = 3
	evGCHeapStats      = 4
	evGCSuspendEEBegin = 9
	evGCAllocationTick = 10
	// GCTriggered fires on the thread that asked for the collection
	// (GCStart on a Server GC's own threads): its stack holds the caller.
	evGCTriggered = 35
	// GCGlobalHeapHistory, after each collection: the number of heaps
	// (more than one: Server GC) and, from version 2, the latency mode.
	evGCGlobalHeapHistory = 205
)

// LatencyModes name GCGlobalHeapHistory's PauseMode (GCSettings.LatencyMode).
var LatencyModes = []string{"Batch", "Interactive", "LowLatency", "SustainedLowLatency", "NoGCRegion"}

// Reasons of a collection (GCStart's Reason).
var reasons = []string{
	"AllocSmall", "Induced", "LowMemory", "Empty", "AllocLarge", "OutOfSpaceSOH", "OutOfSpaceLOH",
	"InducedNotForced", "Internal", "InducedLowMemory", "InducedCompacting", "LowMemoryHost",
	"PMFullGC", "LowMemoryHostBlocking",
}

// ReasonName names a collection's reason.
func ReasonName(r uint32) string {
	if int(r) < len(reasons) {
		return reasons[r]
	}
	return fmt.Sprintf("reason %d", r)
}

// InducedReason says whether a reason is a collection the program asked
// for (GC.Collect() and its variants).
func InducedReason(r uint32) bool { return r == 1 || r == 7 || r == 9 || r == 10 }

// LargeReason says whether a collection was triggered by large-object
// allocation (the LOH's budget or space).
func LargeReason(r uint32) bool { return r == 4 || r == 6 }

// Types of a collection (GCStart's Type).
const (
	TypeBlocking   = 0
	TypeBackground = 1
	TypeForeground = 2
)

// GCStats is what a session saw of the collector.
type GCStats struct {
	// Collections per generation (0, 1, 2), and of them the induced ones
	// and the ones the LOH triggered.
	Collections, Induced, LargeTriggered [3]int
	Background                           int
	// Reasons counts collections per reason name; InducedBy the induced
	// ones per cause and generation ("GC.Collect() gen2").
	Reasons, InducedBy map[string]int
	// Pauses: count, total and longest (suspension to restart), seconds.
	Pauses            int
	PauseSeconds, Max float64
	// The heap after the latest collection: generation 0-2, LOH and POH
	// (.NET 5+) sizes and the pinned objects; HeapSeen says whether any
	// heap statistics came.
	Gen      [3]uint64
	LOH, POH uint64
	Pinned   uint32
	HeapSeen bool
	// Allocation ticks (verbose level only): bytes allocated, small and
	// large objects, as the ticks sample them (one tick per ~100 KB).
	AllocSmall, AllocLarge uint64
	Ticks                  int
	// Heaps is the number of GC heaps the runtime reported (0: none
	// seen; more than one is Server GC); LatencyMode its latency mode
	// ("" when not reported).
	Heaps       int
	LatencyMode string
	// Events counts the runtime's GC events decoded, Malformed the ones
	// too short for their version.
	Events, Malformed int

	suspend    float64
	suspending bool
}

// Clone returns a copy of s.
func (s *GCStats) Clone() *GCStats {
	c := *s
	c.Reasons, c.InducedBy = maps.Clone(s.Reasons), maps.Clone(s.InducedBy)
	return &c
}

// NewGCStats returns empty statistics.
func NewGCStats() *GCStats { return &GCStats{Reasons: map[string]int{}, InducedBy: map[string]int{}} }

// InducedCause names what asked for an induced collection of generation
// gen: GC.Collect() and its modes, or the host's low-memory notification.
func InducedCause(reason, gen uint32) string {
	c := "GC.Collect()"
	switch reason {
	case 7:
		c = "GC.Collect(Optimized)"
	case 9:
		c = "low-memory notification"
	case 10:
		c = "GC.Collect(compacting)"
	}
	return fmt.Sprintf("%s gen%d", c, gen)
}

// Add decodes one event (others are ignored).
func (s *GCStats) Add(e *Event) {
	if e.Meta.Provider != RuntimeProvider {
		return
	}
	b := e.Payload
	u32 := func(off int) (uint32, bool) {
		if off+4 > len(b) {
			return 0, false
		}
		return binary.LittleEndian.Uint32(b[off:]), true
	}
	u64 := func(off int) (uint64, bool) {
		if off+8 > len(b) {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b[off:]), true
	}
	bad := func() { s.Malformed++ }
	switch e.Meta.EventID {
	case evGCStart:
		var depth, reason, typ uint32
		var ok1, ok2, ok3 bool
		if e.Meta.Version == 0 {
			// Count, Reason; no generation: counted as gen 0 unless induced.
			reason, ok2 = u32(4)
			ok1, ok3 = true, true
		} else {
			depth, ok1 = u32(4)
			reason, ok2 = u32(8)
			typ, ok3 = u32(12)
		}
		if !ok1 || !ok2 || !ok3 || depth > 2 {
			bad()
			return
		}
		s.Events++
		s.Collections[depth]++
		s.Reasons[ReasonName(reason)]++
		if InducedReason(reason) {
			s.Induced[depth]++
			s.InducedBy[InducedCause(reason, depth)]++
		}
		if LargeReason(reason) {
			s.LargeTriggered[depth]++
		}
		if typ == TypeBackground {
			s.Background++
		}
	case evGCEnd:
		s.Events++
	case evGCSuspendEEBegin:
		s.Events++
		s.suspend, s.suspending = e.Time, true
	case evGCRestartEEEnd:
		s.Events++
		if s.suspending && e.Time >= s.suspend {
			d := e.Time - s.suspend
			s.Pauses++
			s.PauseSeconds += d
			s.Max = max(s.Max, d)
		}
		s.suspending = false
	case evGCHeapStats:
		// Size and promoted bytes of generations 0-2 and the LOH, then
		// finalization (2 × 8), pinned objects; V2 adds the POH after
		// the ClrInstanceID.
		var ok [5]bool
		s.Gen[0], ok[0] = u64(0)
		s.Gen[1], ok[1] = u64(16)
		s.Gen[2], ok[2] = u64(32)
		s.LOH, ok[3] = u64(48)
		s.Pinned, ok[4] = u32(80)
		if ok != [5]bool{true, true, true, true, true} {
			bad()
			return
		}
		if e.Meta.Version >= 2 {
			if poh, ok := u64(94); ok {
				s.POH = poh
			}
		}
		s.Events++
		s.HeapSeen = true
	case evGCGlobalHeapHistory:
		heaps, ok := u32(8)
		if !ok || heaps == 0 || heaps > 1<<16 {
			bad()
			return
		}
		s.Events++
		s.Heaps = int(heaps)
		if e.Meta.Version >= 2 {
			if m, ok := u32(30); ok {
				s.LatencyMode = fmt.Sprintf("mode %d", m)
				if int(m) < len(LatencyModes) {
					s.LatencyMode = LatencyModes[m]
				}
			}
		}
	case evGCAllocationTick:
		amount, ok1 := u32(0)
		kind, ok2 := u32(4)
		if !ok1 || !ok2 {
			bad()
			return
		}
		if e.Meta.Version >= 2 {
			if a64, ok := u64(10); ok {
				s.addAlloc(kind, a64)
				s.Events++
				s.Ticks++
				return
			}
		}
		s.addAlloc(kind, uint64(amount))
		s.Events++
		s.Ticks++
	}
}

func (s *GCStats) addAlloc(kind uint32, n uint64) {
	if kind == 1 {
		s.AllocLarge += n
	} else {
		s.AllocSmall += n
	}
}
