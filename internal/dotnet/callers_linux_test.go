//go:build linux

package dotnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// nativeOf names the file the target maps at an address, from its memory
// map read once.
func nativeOf(t testing.TB, pid int) func(uint64) string {
	t.Helper()
	maps, err := procfs.Live().ProcMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	return func(a uint64) string {
		for _, m := range maps {
			if a >= m.Start && a < m.End {
				return m.Path
			}
		}
		return ""
	}
}

// callersOf runs a GC session of d on pid keeping the stacks, then a
// rundown session, and names the callers of its induced collections.
func callersOf(t testing.TB, pid int, d time.Duration) *Callers {
	t.Helper()
	ep, err := Find(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	cl := NewCallers()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if _, err := Trace(ctx, ep.Dial, SessionOptions{Providers: GCProviders(false), KeepStacks: true}, cl.Add); err != nil {
		t.Fatal(err)
	}
	if cl.Induced == 0 {
		t.Fatalf("no induced collection in %v", d)
	}
	start := time.Now()
	p, err := RundownMethods(context.Background(), ep.Dial, 10*time.Second, cl.Add)
	if err != nil {
		t.Fatal(err)
	}
	cl.Native = nativeOf(t, pid)
	named, unnamed := cl.Named()
	t.Logf("rundown: %v, %d events (%d of methods, %d malformed) in %d blocks; %d induced, %d stacks, %d addresses; callers %+v, %d unnamed",
		time.Since(start), p.Events, cl.MethodEvents, cl.Malformed, p.Blocks, cl.Induced, len(cl.stacks), cl.Addresses(), named, unnamed)
	for _, s := range cl.stacks {
		for _, a := range s.frames {
			t.Logf("  %#x %q %q", a, cl.names[a], cl.Native(a))
		}
	}
	return cl
}

// GC.Collect() called by a managed method, Acme.Cache.Flush (emitted at
// run time, called from Python through a delegate): the stacks of the
// induced collections name it, past GC.Collect's own frames (ReadyToRun
// code of System.Private.CoreLib, named by the rundown).
func TestRealRuntimeCaller(t *testing.T) {
	l := startLoad(t, "flush", 40)
	cl := callersOf(t, l.pid, 3*time.Second)
	named, unnamed := cl.Named()
	if len(named) != 1 || named[0].Name != "Acme.Cache.Flush" || named[0].Count+unnamed != cl.Induced {
		t.Errorf("callers %+v (%d unnamed) of %d induced collections: want Acme.Cache.Flush", named, unnamed, cl.Induced)
	}
}

// GC.Collect() called from Python through pythonnet: the caller is
// pythonnet's bridge (Python.Runtime), past the reflection that invokes
// GC.Collect and the runtime's native call stub.
func TestRealRuntimeCallerPython(t *testing.T) {
	l := startLoad(t, "busy", 40)
	cl := callersOf(t, l.pid, 3*time.Second)
	named, _ := cl.Named()
	if len(named) == 0 || !strings.HasPrefix(named[0].Name, "Python.Runtime.") {
		t.Errorf("callers %+v: want pythonnet's bridge", named)
	}
}

// TestRecordCallerCaptures re-records the captures of the callers' parser
// tests when MEMDOCTOR_RECORD_NETTRACE names their directory: a session of
// gcload.py flush with its stacks (flush-stacks-3.1, cut after 3
// collections) and the rundown of a session asked only for it
// (flush-rundown-3.1), kept whole but for its event blocks that name none
// of the first's stack addresses.
func TestRecordCallerCaptures(t *testing.T) {
	dir := os.Getenv("MEMDOCTOR_RECORD_NETTRACE")
	if dir == "" {
		t.Skip("set MEMDOCTOR_RECORD_NETTRACE=testdata to re-record the captures")
	}
	l := startLoad(t, "flush", 30)
	time.Sleep(time.Second)
	_, _, raw := traceWith(t, l.pid, 1500*time.Millisecond, GCProviders(false))
	stacks := cutCapture(t, raw, false)
	cl := NewCallers()
	p := NewParser(bytes.NewReader(stacks), Limits{})
	p.KeepStacks = true
	if err := p.Run(cl.Add); err != nil || cl.Induced == 0 {
		t.Fatalf("%v; %d induced", err, cl.Induced)
	}
	ep, err := Find(l.pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	var rd bytes.Buffer
	first := true
	dial := func(ctx context.Context) (net.Conn, error) {
		c, err := ep.Dial(ctx)
		if err == nil && first {
			first = false
			return &teeConn{Conn: c, w: &rd}, nil
		}
		return c, err
	}
	if _, err := RundownMethods(context.Background(), dial, 10*time.Second, func(*Event) {}); err != nil {
		t.Fatal(err)
	}
	whole := rd.Bytes()
	// Keep each object but the event blocks; the method events that name
	// a stack address are written again into one event block at the end
	// (uncompressed headers), the rest of the rundown dropped.
	var out []byte
	var kept [][]byte
	last, events := int64(0), 0
	q := NewParser(bytes.NewReader(whole), Limits{})
	q.onObject = func(pos int64) {
		switch {
		case last == 0:
			out = append(out, whole[:pos]...)
		case q.Events == events:
			out = appendObject(out, whole, last, pos)
		}
		last, events = pos, q.Events
	}
	ids := map[*Meta]uint32{}
	if err := q.Run(func(e *Event) {
		n := len(cl.names)
		cl.Add(e)
		if len(cl.names) > n {
			if len(ids) == 0 {
				for id, m := range q.meta {
					ids[m] = id
				}
			}
			kept = append(kept, plainEvent(ids[e.Meta], e.ThreadID, e.Payload))
		}
	}); err != nil {
		t.Fatal(err)
	}
	out = appendEventBlock(out, kept)
	out = append(out, tagNull)
	named2, _ := cl.Named()
	t.Logf("stacks: %d bytes; rundown: %d bytes, %d kept; callers %+v", len(stacks), len(whole), len(out), named2)
	for name, b := range map[string][]byte{"flush-stacks-3.1.nettrace": stacks, "flush-rundown-3.1.nettrace": out} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// plainEvent encodes an event with an uncompressed header: its size, the
// metadata id, sequence number, thread, capture thread, processor, stack
// id, timestamp, activity ids and the payload's size, then the payload.
func plainEvent(meta uint32, thread uint64, payload []byte) []byte {
	le := binary.LittleEndian
	var b []byte
	b = le.AppendUint32(b, uint32(68+len(payload)))
	b = le.AppendUint32(b, meta)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, thread)
	b = le.AppendUint64(b, thread)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, 0)
	b = append(b, make([]byte, 32)...)
	b = le.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// appendEventBlock appends an EventBlock object (V4) of the events, whose
// headers are not compressed, to a stream out.
func appendEventBlock(out []byte, events [][]byte) []byte {
	le := binary.LittleEndian
	blk := le.AppendUint16(nil, 20)
	blk = le.AppendUint16(blk, 0)
	blk = append(blk, make([]byte, 16)...)
	for _, e := range events {
		blk = append(blk, e...)
	}
	const name = "EventBlock"
	out = append(out, tagBeginPriv, tagBeginPriv, tagNull)
	out = le.AppendUint32(out, 2)
	out = le.AppendUint32(out, 2)
	out = le.AppendUint32(out, uint32(len(name)))
	out = append(out, name...)
	out = append(out, tagEnd)
	out = le.AppendUint32(out, uint32(len(blk)))
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	out = append(out, blk...)
	return append(out, tagEnd)
}

// appendObject appends the block object whole[start:end] to out, its
// padding made again for its new offset (objects dropped before it moved
// it): the object's tag, its type (tags, version, minimum version, name
// length and name, end tag), the block's size, padding to 4 bytes from
// the stream's start, the block, the end tag.
func appendObject(out, whole []byte, start, end int64) []byte {
	obj := whole[start:end]
	nameLen := int(binary.LittleEndian.Uint32(obj[11:]))
	sizeAt := 15 + nameLen + 1
	size := int(binary.LittleEndian.Uint32(obj[sizeAt:]))
	body := obj[len(obj)-1-size : len(obj)-1]
	out = append(out, obj[:sizeAt+4]...)
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	out = append(out, body...)
	return append(out, tagEnd)
}

// TestCallerCost measures what naming the callers costs: memdoctor's CPU
// and allocation for a 3 s session of a busy process (gcload.py flush)
// without and with the stacks kept and the rundown read after it, the
// time the rundown session takes (start to the end of its stream) and the
// target's CPU for it; GCLOAD_METHODS=N gives the target N more methods.
// Run with MEMDOCTOR_DOTNET_BENCH=1; the figures are logged
// (docs/runtimes/dotnet.md).
func TestCallerCost(t *testing.T) {
	if os.Getenv("MEMDOCTOR_DOTNET_BENCH") == "" {
		t.Skip("a measurement of a minute: set MEMDOCTOR_DOTNET_BENCH=1")
	}
	if v, err := strconv.Atoi(os.Getenv("MEMDOCTOR_RUNDOWN_MB")); err == nil {
		rundownBufferMB = uint32(v)
	}
	busy := startLoad(t, "flush", 300, "GCLOAD_METHODS="+os.Getenv("GCLOAD_METHODS"))
	if os.Getenv("GCLOAD_METHODS") != "" {
		// The methods are compiled after the runtime is up.
		for start := time.Now(); !slices.ContainsFunc(busy.output(), func(s string) bool { return strings.HasPrefix(s, "methods ") }); time.Sleep(time.Second) {
			if time.Since(start) > 5*time.Minute {
				t.Fatal("the methods not compiled after 5 minutes")
			}
		}
		time.Sleep(2 * time.Second)
	}
	ep, err := Find(busy.pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	targetCPU := func() time.Duration {
		st, err := procfs.Live().ProcStat(busy.pid)
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(st.UTimeTicks+st.STimeTicks) * 10 * time.Millisecond
	}
	for i := 0; i < 4; i++ {
		callers := i%2 == 1
		var ru0, ru1 syscall.Rusage
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		st, cn, cl := NewGCStats(), NewCounters(), NewCallers()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		provs := append(GCProviders(true), CounterProvider(1))
		_, err := Trace(ctx, ep.Dial, SessionOptions{Providers: provs, KeepStacks: callers, Answer: 30 * time.Second, Drain: 30 * time.Second},
			func(e *Event) { st.Add(e); cn.Add(e); cl.Add(e) })
		stopped := time.Now()
		deadline, _ := ctx.Deadline()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the GC session ended %v after its window", stopped.Sub(deadline).Round(time.Millisecond))
		var rd string
		if callers {
			c0, start := targetCPU(), time.Now()
			p, err := RundownMethods(context.Background(), ep.Dial, 30*time.Second, cl.Add)
			if err != nil {
				t.Fatal(err)
			}
			cl.Native = nativeOf(t, busy.pid)
			named, unnamed := cl.Named()
			rd = fmt.Sprintf("; rundown %v (target CPU %v), %d events, %d method events, %d blocks; callers %+v, %d unnamed",
				time.Since(start).Round(time.Millisecond), targetCPU()-c0, p.Events, cl.MethodEvents, p.Blocks, named, unnamed)
		}
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		runtime.ReadMemStats(&m1)
		cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
		t.Logf("callers %v: %v CPU, %d bytes allocated, heap in use %d -> %d, max RSS %d KiB; %d GC events, %d induced%s",
			callers, cpu.Round(100*time.Microsecond), m1.TotalAlloc-m0.TotalAlloc, m0.HeapInuse, m1.HeapInuse, ru1.Maxrss, st.Events, cl.Induced, rd)
	}
}
