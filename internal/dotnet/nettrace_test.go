package dotnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
)

func readCapture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseAll(b []byte, lim Limits) (*Parser, *GCStats, error) {
	st := NewGCStats()
	p := NewParser(bytes.NewReader(b), lim)
	err := p.Run(st.Add)
	return p, st, err
}

// The captures are real streams of a .NET Core 3.1 Server GC process
// (testdata/gcload.py), recorded by TestRecordCaptures.
func TestParseCaptures(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		p, st, err := parseAll(readCapture(t, "busy-info-3.1.nettrace"), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		n := st.Collections[0] + st.Collections[1] + st.Collections[2]
		if n < 3 || st.Collections[2] == 0 {
			t.Errorf("collections %v, want at least 3 with gen2", st.Collections)
		}
		sum := 0
		for r, c := range st.Reasons {
			if r != "Induced" && r != "AllocLarge" {
				t.Errorf("reason %s (%d): gcload.py busy induces gen2 or allocates large objects only", r, c)
			}
			sum += c
		}
		if sum != n || st.Induced[2]+st.LargeTriggered[2] != n {
			t.Errorf("reasons %v and induced %v + large %v do not add up to %d collections", st.Reasons, st.Induced, st.LargeTriggered, n)
		}
		if st.Pauses == 0 || st.PauseSeconds <= 0 || st.Max > 5 {
			t.Errorf("pauses %d, %.6f s, longest %.6f s", st.Pauses, st.PauseSeconds, st.Max)
		}
		if !st.HeapSeen || st.Gen[2] == 0 || st.LOH == 0 {
			t.Errorf("heap after collection: gen %v LOH %d (seen %v)", st.Gen, st.LOH, st.HeapSeen)
		}
		if st.Malformed != 0 {
			t.Errorf("%d GC events too short for their version", st.Malformed)
		}
		if p.Info.QPCFrequency != 1e9 || p.Info.PointerSize != 8 || p.Info.PID == 0 {
			t.Errorf("trace object %+v", p.Info)
		}
		// Server GC (gcload.py's runtimeconfig.json) has a heap per
		// processor; concurrent GC runs in the Interactive latency mode.
		if st.Heaps != int(p.Info.Processors) || st.LatencyMode != "Interactive" {
			t.Errorf("%d heaps on %d processors, latency mode %q: want a Server GC heap each, Interactive", st.Heaps, p.Info.Processors, st.LatencyMode)
		}
	})
	t.Run("verbose", func(t *testing.T) {
		_, st, err := parseAll(readCapture(t, "busy-verbose-3.1.nettrace"), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Ticks == 0 || st.AllocLarge == 0 || st.AllocSmall == 0 {
			t.Errorf("allocation ticks %d: small %d, large %d bytes", st.Ticks, st.AllocSmall, st.AllocLarge)
		}
		// 200 KB arrays against 1 KB ones: the large ones dominate.
		if st.AllocLarge < 4*st.AllocSmall {
			t.Errorf("large %d bytes against small %d: the busy loop allocates 200 times more large", st.AllocLarge, st.AllocSmall)
		}
	})
	t.Run("quiet", func(t *testing.T) {
		p, st, err := parseAll(readCapture(t, "quiet-info-3.1.nettrace"), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Events != 0 || p.Blocks == 0 {
			t.Errorf("a quiet process: %d GC events in %d blocks", st.Events, p.Blocks)
		}
	})
}

// The System.Runtime counters of a 3.1 capture (busy-counters: GC events
// and the counters at 1 s in one session): the self-describing payloads
// decoded by their field descriptions, MB turned into bytes.
func TestParseCounters(t *testing.T) {
	cn, st := NewCounters(), NewGCStats()
	var fields []Field
	p := NewParser(bytes.NewReader(readCapture(t, "busy-counters-3.1.nettrace")), Limits{})
	err := p.Run(func(e *Event) {
		st.Add(e)
		cn.Add(e)
		if e.Meta.Provider == CountersProvider {
			fields = e.Meta.Fields
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if cn.Reports < 19 || cn.Malformed != 0 || st.Events == 0 {
		t.Fatalf("%d counter reports (%d malformed), %d GC events", cn.Reports, cn.Malformed, st.Events)
	}
	// {Payload: {Name, DisplayName, Mean, ...}} under an unnamed root.
	if len(fields) != 1 || len(fields[0].Fields) != 1 || fields[0].Fields[0].Name != "Payload" || len(fields[0].Fields[0].Fields) < 10 {
		t.Errorf("EventCounters fields %+v", fields)
	}
	heap, _ := cn.Get("gc-heap-size")
	ws, _ := cn.Get("working-set")
	if heap <= 0 || ws <= 0 || heap != float64(int64(heap/1e6))*1e6 || ws < heap {
		t.Errorf("gc-heap-size %.0f, working-set %.0f bytes: whole MB, the heap within the working set", heap, ws)
	}
	// The generations' sizes after a collection agree with the GC events'
	// heap statistics of the same stream within a factor of 2.
	g2, _ := cn.Get("gen-2-size")
	if g2 <= 0 || float64(st.Gen[2]) < g2/2 || float64(st.Gen[2]) > 2*g2 {
		t.Errorf("gen-2-size %.0f, GCHeapStats gen2 %d", g2, st.Gen[2])
	}
	if cn.Sum["alloc-rate"] < 1<<20 || cn.Sum["gen-2-gc-count"] < 1 {
		t.Errorf("increments %v", cn.Sum)
	}
}

// Where the caller of GC.Collect() is in a 3.1 stream: GCStart of a
// Server GC fires on the GC's own threads, all with one stack; GCTriggered
// fires on the thread that asked, with that thread's stack (one for the
// induced collections, another for the ones large allocations
// triggered). Callers names the caller from those stacks and a rundown
// (TestCallersCaptures).
func TestStacksOfTriggers(t *testing.T) {
	p := NewParser(bytes.NewReader(readCapture(t, "busy-counters-3.1.nettrace")), Limits{})
	startStacks, triggerStacks := map[uint32]bool{}, map[uint32]map[uint32]bool{}
	err := p.Run(func(e *Event) {
		if e.Meta.Provider != RuntimeProvider || len(e.Payload) < 4 {
			return
		}
		switch e.Meta.EventID {
		case evGCStart:
			startStacks[e.StackID] = true
		case evGCTriggered:
			r := binary.LittleEndian.Uint32(e.Payload)
			if triggerStacks[r] == nil {
				triggerStacks[r] = map[uint32]bool{}
			}
			triggerStacks[r][e.StackID] = true
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Stacks == 0 || len(startStacks) != 1 || len(triggerStacks[1]) != 1 || len(triggerStacks[4]) != 1 {
		t.Fatalf("%d stacks; GCStart's %v, GCTriggered's by reason %v", p.Stacks, startStacks, triggerStacks)
	}
	for id := range triggerStacks[1] {
		if startStacks[id] || triggerStacks[4][id] || id == 0 {
			t.Errorf("induced collections triggered with stack %d, GCStart's %v, large allocation's %v", id, startStacks, triggerStacks[4])
		}
	}
}

// Field descriptions and payloads that lie: too many fields, too deep,
// payloads shorter than their fields, unknown types. Nothing panics;
// the event is counted malformed.
func TestCountersHostile(t *testing.T) {
	le := binary.LittleEndian
	str := func(b []byte, s string) []byte {
		for _, r := range s {
			b = le.AppendUint16(b, uint16(r))
		}
		return le.AppendUint16(b, 0)
	}
	payload := func(fields []Field) []Field {
		return []Field{{Type: TypeObject, Fields: []Field{{Name: "Payload", Type: TypeObject, Fields: fields}}}}
	}
	named := []Field{{Name: "Name", Type: TypeString}, {Name: "Mean", Type: TypeDouble}, {Name: "DisplayUnits", Type: TypeString}}
	good := str(nil, "gc-heap-size")
	good = le.AppendUint64(good, 0x4014000000000000) // 5.0
	good = str(good, "MB")
	ev := func(f []Field, b []byte) *Event {
		return &Event{Meta: &Meta{Provider: CountersProvider, Name: "EventCounters", Fields: f}, Payload: b}
	}
	cn := NewCounters()
	cn.Add(ev(payload(named), good))
	if v, _ := cn.Get("gc-heap-size"); v != 5e6 || cn.Malformed != 0 {
		t.Fatalf("gc-heap-size %v, malformed %d", v, cn.Malformed)
	}
	cn.Add(ev(payload(named), good[:len(good)-3]))                                              // cut
	cn.Add(ev(payload([]Field{{Name: "Name", Type: TypeString}, {Name: "X", Type: 99}}), good)) // unknown type
	cn.Add(ev(nil, good))                                                                       // no fields
	cn.Add(ev(payload([]Field{{Name: "Name", Type: TypeString}}), good))                        // neither mean nor increment
	if cn.Malformed != 4 || cn.Reports != 1 {
		t.Errorf("malformed %d, reports %d", cn.Malformed, cn.Reports)
	}
	// Field descriptions past the bounds are dropped with the metadata's
	// fields, not the stream.
	deep := le.AppendUint32(nil, 1)
	for i := 0; i < maxFieldDepth+3; i++ {
		deep = le.AppendUint32(deep, TypeObject)
		deep = le.AppendUint32(deep, 1)
	}
	wide := le.AppendUint32(nil, maxFields+1)
	for _, b := range [][]byte{deep, wide} {
		c := &cursor{b: b}
		if f := c.fields(0); c.err == nil {
			t.Errorf("field descriptions %x read as %+v", b, f)
		}
	}
}

// Every prefix of a capture ends in an error or a clean end, never a
// panic, and what is counted only grows with the prefix.
func TestParsePrefixes(t *testing.T) {
	b := readCapture(t, "busy-info-3.1.nettrace")
	last := 0
	for n := 0; n < len(b); n += 7 {
		_, st, err := parseAll(b[:n], Limits{})
		if err == nil {
			t.Fatalf("prefix of %d bytes (of %d) parsed as a whole stream", n, len(b))
		}
		if !errors.Is(err, ErrFormat) && !errors.Is(err, io.EOF) {
			t.Fatalf("prefix of %d bytes: %v", n, err)
		}
		if st.Events < last {
			t.Fatalf("prefix of %d bytes: %d events, fewer than a shorter prefix's %d", n, st.Events, last)
		}
		last = st.Events
	}
}

func TestParseLimits(t *testing.T) {
	b := readCapture(t, "busy-info-3.1.nettrace")
	for name, lim := range map[string]Limits{
		"block":    {MaxBlock: 512},
		"metadata": {MaxMetadata: 2},
		"bytes":    {MaxBytes: 2000},
	} {
		if _, _, err := parseAll(b, lim); !errors.Is(err, ErrLimit) {
			t.Errorf("%s limit %+v: %v, want ErrLimit", name, lim, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	good := readCapture(t, "quiet-info-3.1.nettrace")
	for name, b := range map[string][]byte{
		"empty":      nil,
		"magic":      append([]byte("NetTrace"), good[8:]...),
		"header":     append(append([]byte(nil), good[:12]...), []byte("!FastSerialization.2")...),
		"object tag": append(append([]byte(nil), good[:32]...), 9),
	} {
		if _, _, err := parseAll(b, Limits{}); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
}

// The layouts of the GC events by version: GCStart V0 (no generation),
// V1/V2, GCHeapStats V2 (.NET 5+, with the POH), GCAllocationTick V1
// (32-bit amount) and V2+ (64-bit amount).
func TestGCEventVersions(t *testing.T) {
	le := binary.LittleEndian
	ev := func(id, ver uint32, payload []byte) *Event {
		return &Event{Meta: &Meta{Provider: RuntimeProvider, EventID: id, Version: ver}, Payload: payload}
	}
	u32s := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = le.AppendUint32(b, x)
		}
		return b
	}
	st := NewGCStats()
	st.Add(ev(evGCStart, 0, u32s(7, 1)))             // V0: count, reason Induced
	st.Add(ev(evGCStart, 2, u32s(8, 2, 4, 1, 0, 0))) // gen2, AllocLarge, background
	st.Add(ev(evGCStart, 1, u32s(9, 1, 0)))          // too short
	heap := make([]byte, 110)
	le.PutUint64(heap[32:], 3000) // gen2
	le.PutUint64(heap[48:], 5000) // LOH
	le.PutUint32(heap[80:], 12)   // pinned
	le.PutUint64(heap[94:], 7000) // POH
	st.Add(ev(evGCHeapStats, 2, heap))
	st.Add(ev(evGCAllocationTick, 1, u32s(100000, 1)))
	tick := append(u32s(0, 0), 0, 0)
	tick = le.AppendUint64(tick, 1<<33)
	st.Add(ev(evGCAllocationTick, 3, tick))
	st.Add(&Event{Meta: &Meta{Provider: "Other", EventID: evGCStart, Version: 2}, Payload: u32s(1, 2, 1, 0)})
	if st.Collections != [3]int{1, 0, 1} || st.Induced != [3]int{1, 0, 0} || st.LargeTriggered != [3]int{0, 0, 1} || st.Background != 1 {
		t.Errorf("collections %v induced %v large %v background %d", st.Collections, st.Induced, st.LargeTriggered, st.Background)
	}
	if st.Gen[2] != 3000 || st.LOH != 5000 || st.POH != 7000 || st.Pinned != 12 {
		t.Errorf("heap %v LOH %d POH %d pinned %d", st.Gen, st.LOH, st.POH, st.Pinned)
	}
	if st.AllocLarge != 100000 || st.AllocSmall != 1<<33 || st.Ticks != 2 {
		t.Errorf("ticks %d: large %d small %d", st.Ticks, st.AllocLarge, st.AllocSmall)
	}
	if st.Malformed != 1 {
		t.Errorf("%d malformed, want the short GCStart", st.Malformed)
	}
}

// FuzzParse: any stream parses to an error or an end within the limits,
// never a panic or a hang. Seeds: the recorded captures.
func FuzzParse(f *testing.F) {
	for _, n := range []string{"busy-info-3.1.nettrace", "quiet-info-3.1.nettrace", "busy-counters-3.1.nettrace",
		"flush-stacks-3.1.nettrace", "flush-rundown-3.1.nettrace"} {
		f.Add(readCapture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cn := NewCounters()
		st := NewGCStats()
		cl := NewCallers()
		p := NewParser(bytes.NewReader(b), Limits{MaxBlock: 64 << 10, MaxMetadata: 64, MaxBytes: 1 << 20})
		p.KeepStacks = true
		_ = p.Run(func(e *Event) { st.Add(e); cn.Add(e); cl.Add(e) })
		if named, unnamed := cl.Named(); len(named) > maxInducedStacks || unnamed > cl.Induced || p.stackAddrs > maxStackAddrs || len(cl.names) > cl.Addresses() {
			t.Fatalf("%d callers, %d unnamed of %d, %d stack addresses, %d names for %d addresses", len(named), unnamed, cl.Induced, p.stackAddrs, len(cl.names), cl.Addresses())
		}
		if len(cn.Last)+len(cn.Sum) > maxCounters || cn.Reports > len(b) {
			t.Fatalf("%d counters, %d reports from %d bytes", len(cn.Last)+len(cn.Sum), cn.Reports, len(b))
		}
		if len(p.meta) > 64 || st.Events > len(b) {
			t.Fatalf("%d kinds of event, %d events from %d bytes", len(p.meta), st.Events, len(b))
		}
	})
}
