package dotnet

// The caller of GC.Collect(). GCTriggered (event 35, GC keyword) fires on
// the thread that asked for a collection, with that thread's stack: the
// return addresses of its managed frames, innermost first, and of the
// runtime's native frames between them. The addresses are named by the
// methods whose code covers them: the runtime's MethodLoadVerbose events
// (JIT keyword, methods compiled during the session) and the rundown's
// MethodDCStartVerbose/MethodDCEndVerbose (every method loaded when the
// session stops, the ReadyToRun-precompiled ones of System.Private.CoreLib
// such as GC.Collect itself among them; measured on .NET Core 3.1.23).
//
// Only the addresses of the induced collections' stacks are kept, and of
// the methods only the names of those covering one: a rundown of millions
// of methods costs its parse, not memory. The caller is the first frame
// past the GC's own (System.GC) and the runtime's plumbing (reflection,
// delegates, stubs, the runtime's native code); a frame no method or
// known native image covers stops the walk: no caller is named rather
// than a wrong one.

import (
	"encoding/binary"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// RundownProvider sends the rundown: the methods and modules loaded,
// when a session that asked for it stops.
const RundownProvider = "Microsoft-Windows-DotNETRuntimeRundown"

// Method events: MethodLoadVerbose of the runtime's provider (143); the
// rundown's MethodDCStartVerbose (143) and MethodDCEndVerbose (144). Their
// payload: MethodID, ModuleID, MethodStartAddress (8 bytes each),
// MethodSize, MethodToken, MethodFlags (4 each), then the namespace (the
// type's full name), the name and the signature, NUL-terminated UTF-16.
const (
	evMethodLoadVerbose    = 143
	evMethodDCStartVerbose = 143
	evMethodDCEndVerbose   = 144
)

// KeywordJIT and KeywordLoader are the runtime's keywords for the
// methods compiled and the modules loaded.
const (
	KeywordLoader = 0x8
	KeywordJIT    = 0x10
)

// Bounds of what Callers keeps.
const (
	maxInducedStacks = 32
	maxMethodName    = 512
)

// Callers names the callers of the induced collections of a session.
type Callers struct {
	// Induced counts the GCTriggered events of an induced collection;
	// Unkept those whose stack the stream did not give or that came past
	// the distinct stacks kept.
	Induced, Unkept int
	// MethodEvents counts the method events read, Malformed those too
	// short for their fields.
	MethodEvents, Malformed int
	// Native names the file mapped at an address no method covers (the
	// target's memory map; nil or "": unknown). A frame in the runtime's
	// own libraries is plumbing.
	Native func(addr uint64) string

	stacks []inducedStack
	// addrs are the stacks' distinct return addresses, sorted; names the
	// methods covering them.
	addrs []uint64
	names map[uint64]string
}

type inducedStack struct {
	frames []uint64
	count  int
}

// NewCallers returns an empty Callers.
func NewCallers() *Callers { return &Callers{names: map[uint64]string{}} }

// Add reads one event: an induced collection's trigger and its stack, or
// a method's code range (others are ignored).
func (c *Callers) Add(e *Event) {
	switch {
	case e.Meta.Provider == RuntimeProvider && e.Meta.EventID == evGCTriggered:
		if len(e.Payload) < 4 || !InducedReason(binary.LittleEndian.Uint32(e.Payload)) {
			return
		}
		c.Induced++
		c.addStack(e.Stack)
	case e.Meta.Provider == RuntimeProvider && e.Meta.EventID == evMethodLoadVerbose,
		e.Meta.Provider == RundownProvider && (e.Meta.EventID == evMethodDCStartVerbose || e.Meta.EventID == evMethodDCEndVerbose):
		c.addMethod(e.Payload)
	}
}

func (c *Callers) addStack(frames []uint64) {
	if len(frames) == 0 {
		c.Unkept++
		return
	}
	for i := range c.stacks {
		if slices.Equal(c.stacks[i].frames, frames) {
			c.stacks[i].count++
			return
		}
	}
	if len(c.stacks) >= maxInducedStacks {
		c.Unkept++
		return
	}
	c.stacks = append(c.stacks, inducedStack{frames: slices.Clone(frames), count: 1})
	for _, a := range frames {
		if i, found := slices.BinarySearch(c.addrs, a); !found {
			c.addrs = slices.Insert(c.addrs, i, a)
		}
	}
}

// addMethod names the kept addresses a method's code covers: a return
// address a lies in the method whose code holds a-1 (a call may be its
// last instruction).
func (c *Callers) addMethod(b []byte) {
	c.MethodEvents++
	if len(b) < 36 {
		c.Malformed++
		return
	}
	start := binary.LittleEndian.Uint64(b[16:])
	size := uint64(binary.LittleEndian.Uint32(b[24:]))
	i := sort.Search(len(c.addrs), func(i int) bool { return c.addrs[i] > start })
	if i == len(c.addrs) || c.addrs[i]-start > size {
		return
	}
	cur := &cursor{b: b, off: 36}
	ns := cur.utf16z("method namespace")
	name := cur.utf16z("method name")
	if cur.err != nil {
		c.Malformed++
		return
	}
	full := methodName(ns, name)
	for ; i < len(c.addrs) && c.addrs[i]-start <= size; i++ {
		c.names[c.addrs[i]] = full
	}
}

// methodName joins a method's type and name, "" when either is empty,
// too long, or holds a character no .NET type or method name shown here
// would (the names are the target's words).
func methodName(ns, name string) string {
	full := name
	if ns != "" {
		full = ns + "." + name
	}
	if ns == "" || name == "" || len(full) > maxMethodName {
		return ""
	}
	for _, r := range full {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._`<>+$[],@-", r) {
			return ""
		}
	}
	return full
}

// Addresses is how many distinct return addresses are kept.
func (c *Callers) Addresses() int { return len(c.addrs) }

// Unresolved says whether a kept stack has an address no method covers
// yet (a rundown would name it).
func (c *Callers) Unresolved() bool {
	for _, a := range c.addrs {
		if _, ok := c.names[a]; !ok {
			return true
		}
	}
	return false
}

// Caller is a method named as the caller of induced collections, and how
// many of the session's induced collections it asked for.
type Caller struct {
	Name  string
	Count int
}

// Named returns the callers named, most collections first, and the
// induced collections whose caller could not be named.
func (c *Callers) Named() ([]Caller, int) {
	by := map[string]int{}
	unnamed := c.Unkept
	for _, s := range c.stacks {
		if n := c.caller(s.frames); n != "" {
			by[n] += s.count
		} else {
			unnamed += s.count
		}
	}
	out := make([]Caller, 0, len(by))
	for n, k := range by {
		out = append(out, Caller{Name: n, Count: k})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out, unnamed
}

// caller walks a stack from its innermost frame: it must start in the
// GC's own methods; past them and the runtime's plumbing, the first
// method is the caller. A frame nothing names ends the walk unnamed.
func (c *Callers) caller(frames []uint64) string {
	inGC := false
	for _, a := range frames {
		n, ok := c.names[a]
		if !ok || n == "" {
			if c.Native != nil && runtimeImage(c.Native(a)) {
				continue
			}
			return ""
		}
		switch {
		case strings.HasPrefix(n, "System.GC."):
			inGC = true
		case !inGC:
			return "" // not a stack of GC.Collect()
		case plumbing(n):
		default:
			return n
		}
	}
	return ""
}

// runtimeImage says whether a file is one of the runtime's own native
// libraries (the call stubs of reflection and delegates run there).
func runtimeImage(file string) bool {
	switch path.Base(file) {
	case "libcoreclr.so", "libclrjit.so", "libcoreclr.dylib", "libclrjit.dylib":
		return true
	}
	return false
}

// plumbing says whether a method is the runtime's machinery between a
// caller and what it calls: reflection, delegates, marshalling stubs.
func plumbing(n string) bool {
	for _, p := range []string{"System.Reflection.", "System.RuntimeMethodHandle.", "System.RuntimeType.",
		"System.Delegate.", "System.MulticastDelegate.", "ILStubClass.", "System.Runtime.CompilerServices.",
		"System.StubHelpers."} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}
