package dotnet

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"
	"unicode/utf16"
)

// callersOfCaptures reads the recorded flush session's stacks and, when
// rundown, the rundown of the same process (testdata/gcload.py flush:
// GC.Collect() called by the emitted Acme.Cache.Flush).
func callersOfCaptures(t *testing.T, keepStacks, rundown bool) *Callers {
	t.Helper()
	cl := NewCallers()
	p := NewParser(bytes.NewReader(readCapture(t, "flush-stacks-3.1.nettrace")), Limits{})
	p.KeepStacks = keepStacks
	if err := p.Run(cl.Add); err != nil {
		t.Fatal(err)
	}
	if rundown {
		if err := NewParser(bytes.NewReader(readCapture(t, "flush-rundown-3.1.nettrace")), Limits{}).Run(cl.Add); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

func TestCallersCaptures(t *testing.T) {
	cl := callersOfCaptures(t, true, true)
	named, unnamed := cl.Named()
	if cl.Induced == 0 || len(named) != 1 || named[0].Name != "Acme.Cache.Flush" || named[0].Count != cl.Induced || unnamed != 0 {
		t.Fatalf("callers %+v, %d unnamed, of %d induced collections: want Acme.Cache.Flush for all", named, unnamed, cl.Induced)
	}
	// The innermost frames are GC.Collect's own (ReadyToRun code the
	// rundown names), then Acme.Cache.Flush; the runtime's native call
	// stub further out is named by no method.
	s := cl.stacks[0].frames
	if len(s) < 4 || cl.names[s[0]] != "System.GC.Collect" || cl.names[s[2]] != "Acme.Cache.Flush" {
		t.Errorf("frames %x named %v", s, cl.names)
	}
	if !cl.Unresolved() {
		t.Errorf("every address named %v: the native call stub is no method", cl.names)
	}
	if cl.Malformed != 0 || cl.MethodEvents == 0 {
		t.Errorf("%d method events, %d malformed", cl.MethodEvents, cl.Malformed)
	}

	// Without the rundown no frame is named, so no caller.
	cl = callersOfCaptures(t, true, false)
	if named, unnamed := cl.Named(); len(named) != 0 || unnamed != cl.Induced || !cl.Unresolved() {
		t.Errorf("without the rundown: callers %+v, %d unnamed of %d", named, unnamed, cl.Induced)
	}
	// A parser that keeps no stack gives none: each induced collection
	// unkept.
	cl = callersOfCaptures(t, false, true)
	if named, unnamed := cl.Named(); len(named) != 0 || cl.Unkept != cl.Induced || unnamed != cl.Induced || cl.Addresses() != 0 {
		t.Errorf("without stacks: callers %+v, %d unnamed, %d unkept of %d", named, unnamed, cl.Unkept, cl.Induced)
	}
}

// methodEvent builds a MethodLoadVerbose event of a method's code range
// and names.
func methodEvent(start uint64, size uint32, ns, name string) *Event {
	le := binary.LittleEndian
	b := le.AppendUint64(nil, 1)
	b = le.AppendUint64(b, 2)
	b = le.AppendUint64(b, start)
	b = le.AppendUint32(b, size)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 0)
	for _, s := range []string{ns, name, "void ()"} {
		for _, u := range utf16.Encode([]rune(s)) {
			b = le.AppendUint16(b, u)
		}
		b = le.AppendUint16(b, 0)
	}
	return &Event{Meta: &Meta{Provider: RuntimeProvider, EventID: evMethodLoadVerbose}, Payload: b}
}

func triggered(reason uint32, stack ...uint64) *Event {
	return &Event{Meta: &Meta{Provider: RuntimeProvider, EventID: evGCTriggered}, Payload: binary.LittleEndian.AppendUint32(nil, reason), Stack: stack}
}

// No caller is named rather than a wrong one: a frame nothing covers
// between GC.Collect and a method, a stack that does not start in the
// GC, a name that is no .NET name. Only induced collections count.
func TestCallersNameNoWrongOne(t *testing.T) {
	cl := NewCallers()
	cl.Add(triggered(1, 0x1010, 0x2010, 0x3010))         // GC, Flush, App.Main: Flush
	cl.Add(triggered(1, 0x1010, 0x9010, 0x2010))         // GC, unknown, Flush: none
	cl.Add(triggered(1, 0x2010, 0x3010))                 // no GC frame: none
	cl.Add(triggered(1, 0x1010, 0x4010, 0x5010, 0x3010)) // GC, reflection, bad name: none
	cl.Add(triggered(1, 0x1010, 0x6010, 0x3010))         // GC, libcoreclr, App.Main: App.Main
	cl.Add(triggered(4, 0x1010, 0x3010))                 // AllocLarge: not induced
	cl.Add(triggered(1))                                 // no stack
	for _, e := range []*Event{methodEvent(0x1000, 0x20, "System.GC", "Collect"), methodEvent(0x2000, 0x10, "Acme.Cache", "Flush"),
		methodEvent(0x3000, 0x100, "App", "Main"), methodEvent(0x4000, 0x100, "System.Reflection.RuntimeMethodInfo", "Invoke"),
		methodEvent(0x5000, 0x100, "Evil\x1b[2J", "Name"), methodEvent(0x7000, 0x100, "Far", "Away")} {
		cl.Add(e)
	}
	cl.Native = func(a uint64) string {
		if a >= 0x6000 && a < 0x7000 {
			return "/usr/share/dotnet/shared/Microsoft.NETCore.App/3.1.23/libcoreclr.so"
		}
		return ""
	}
	named, unnamed := cl.Named()
	want := []Caller{{"Acme.Cache.Flush", 1}, {"App.Main", 1}}
	if len(named) != 2 || named[0] != want[0] || named[1] != want[1] || unnamed != 4 || cl.Induced != 6 {
		t.Errorf("callers %+v, %d unnamed of %d induced: want %+v and 4 unnamed of 6", named, unnamed, cl.Induced, want)
	}
	// A return address at a method's very end is its own (the call was
	// its last instruction), at its start the one before's.
	cl = NewCallers()
	cl.Add(triggered(1, 0x1020, 0x2000, 0x3010))
	cl.Add(methodEvent(0x1000, 0x20, "System.GC", "Collect"))
	cl.Add(methodEvent(0x2000, 0x10, "Acme.Cache", "Flush"))
	cl.Add(methodEvent(0x1ff0, 0x10, "Before", "It"))
	if named, _ := cl.Named(); len(named) != 1 || named[0].Name != "Before.It" {
		t.Errorf("callers %+v: want Before.It, whose code ends where Flush's begins", named)
	}
}

// A hostile stream cannot bloat the callers: distinct stacks beyond the
// bound are counted, not kept, and of a million method events only the
// names of those covering a kept address stay.
func TestCallersBounded(t *testing.T) {
	cl := NewCallers()
	for i := 0; i < 1000; i++ {
		frames := make([]uint64, maxFrames)
		for j := range frames {
			frames[j] = uint64(i*maxFrames+j)*64 + 0x100000
		}
		cl.Add(triggered(1, frames...))
	}
	if len(cl.stacks) != maxInducedStacks || cl.Unkept != 1000-maxInducedStacks || cl.Addresses() != maxInducedStacks*maxFrames {
		t.Fatalf("%d stacks, %d unkept, %d addresses", len(cl.stacks), cl.Unkept, cl.Addresses())
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	e := methodEvent(0, 32, "Some.Namespace.Type", "Method"+string(bytes.Repeat([]byte("N"), 1000)))
	for i := 0; i < 1_000_000; i++ {
		binary.LittleEndian.PutUint64(e.Payload[16:], uint64(i)*32)
		cl.Add(e)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if len(cl.names) > cl.Addresses() || cl.MethodEvents != 1_000_000 {
		t.Errorf("%d names kept for %d addresses, %d method events", len(cl.names), cl.Addresses(), cl.MethodEvents)
	}
	if grew := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); grew > 4<<20 {
		t.Errorf("a million method events grew the heap by %d bytes", grew)
	}
}

// The parser keeps at most maxStackAddrs addresses of stacks between two
// sequence points; stacks past that are dropped, counted, and their
// events carry none.
func TestKeepStacksBounded(t *testing.T) {
	p := NewParser(bytes.NewReader(nil), Limits{})
	p.Info.PointerSize = 8
	p.KeepStacks = true
	raw := make([]byte, 8*maxFrames*2) // longer than a stack is kept
	block := func(first uint32, n int) []byte {
		b := binary.LittleEndian.AppendUint32(nil, first)
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for i := 0; i < n; i++ {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(raw)))
			b = append(b, raw...)
		}
		return b
	}
	n := maxStackAddrs/maxFrames + 10
	p.stackBlock(block(1, n))
	if p.stackAddrs > maxStackAddrs || p.StacksDropped != 10 || len(p.stacks[1]) != maxFrames || p.stacks[uint32(n)] != nil {
		t.Errorf("%d addresses kept, %d stacks dropped, stack 1 of %d frames", p.stackAddrs, p.StacksDropped, len(p.stacks[1]))
	}
}
