package heapprof

import (
	"cmp"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/preload"
)

// Site is one symbolized call stack and what its allocations hold.
type Site struct {
	// Stack is the function names, the allocating function first.
	Stack []string `json:"stack"`
	// Lines are the source positions of the calls ("file.c:123"), one per
	// frame of Stack, "" where the file has no DWARF line info; absent
	// when no frame has one.
	Lines []string `json:"lines,omitempty"`
	// Object is the file of the allocating function.
	Object       string  `json:"object,omitempty"`
	InUseBytes   int64   `json:"inUseBytes"`
	InUseObjects int64   `json:"inUseObjects"`
	AllocBytes   int64   `json:"allocBytes"`
	AllocObjects int64   `json:"allocObjects"`
	Share        float64 `json:"inUseShare"` // of all in-use bytes sampled
	// GrowthBytes is the change of InUseBytes since the base dump (with a base).
	GrowthBytes int64 `json:"growthBytes,omitempty"`
	key         string
}

// maxName bounds each function name in a title (C++ names run to
// kilobytes; the names come from the target's files).
const maxName = 120

// Title is "leaf ← caller ← caller (object)", at most depth functions; the
// leaf is followed by its source position when known ("leaf at file.c:12").
func (s Site) Title(depth int) string {
	st := s.Stack
	if len(st) > depth {
		st = st[:depth]
	}
	names := make([]string, len(st))
	for i, n := range st {
		if len(n) > maxName {
			n = strings.ToValidUTF8(n[:maxName], "") + "…"
		}
		names[i] = n
	}
	if len(names) > 0 && len(s.Lines) > 0 && s.Lines[0] != "" {
		names[0] += " at " + s.Lines[0]
	}
	t := strings.Join(names, " ← ")
	if s.Object != "" {
		t += " (" + path.Base(s.Object) + ")"
	}
	return t
}

// Report ranks the sites of a dump, and their growth since a base dump.
type Report struct {
	PID          int       `json:"pid"`
	Rate         uint64    `json:"rateBytes"`
	Time         time.Time `json:"time"`
	Samples      uint64    `json:"samples"`
	Dropped      uint64    `json:"dropped"`
	InUseBytes   int64     `json:"inUseBytes"`
	Sites        []Site    `json:"sites"`                  // holding bytes, by in-use bytes
	Base         time.Time `json:"baseTime,omitzero"`      // the base dump's time
	GrowthBytes  int64     `json:"growthBytes,omitempty"`  // of all sites
	Growth       []Site    `json:"growth,omitempty"`       // sites that grew, by growth
	ProfileFile  string    `json:"profileFile,omitempty"`  // the pprof file written
	ProfileError string    `json:"profileError,omitempty"` // why it was not
	// Source is "ebpf" for a profile sampled by uprobes (leaks --ebpf):
	// only what was allocated while they were attached, Base their start.
	Source string   `json:"source,omitempty"`
	Notes  []string `json:"notes,omitempty"` // what the numbers leave out
}

// frames symbolizes a stack, dropping the library's own frames at the leaf.
func frames(sym *Symbolizer, d *Dump, s Stack) []Frame {
	var out []Frame
	for _, pc := range s.PCs {
		f := sym.Frame(d.Maps, pc)
		if len(out) == 0 && path.Base(f.Object) == preload.LibName { // the library's own frames are not sites
			continue
		}
		out = append(out, f)
	}
	return out
}

// sites folds the stacks of d into sites (stacks that symbolize alike are one).
func sites(sym *Symbolizer, d *Dump) map[string]*Site {
	out := map[string]*Site{}
	for _, s := range d.Stacks {
		fr := frames(sym, d, s)
		names := make([]string, len(fr))
		lines := make([]string, len(fr))
		anyLine := false
		for i, f := range fr {
			names[i] = f.Name()
			lines[i] = f.Position()
			anyLine = anyLine || lines[i] != ""
		}
		if !anyLine {
			lines = nil
		}
		if len(names) == 0 {
			names = []string{"(unknown)"}
		}
		obj := ""
		if len(fr) > 0 {
			obj = fr[0].Object
		}
		key := obj + "\x00" + strings.Join(names, "\x00") + "\x00" + strings.Join(lines, "\x00")
		st := out[key]
		if st == nil {
			st = &Site{Stack: names, Lines: lines, Object: obj, key: key}
			out[key] = st
		}
		st.InUseBytes += s.InUseBytes
		st.InUseObjects += s.InUseObjects
		st.AllocBytes += s.AllocBytes
		st.AllocObjects += s.AllocObjects
	}
	return out
}

// NewReport ranks the sites of d; with base (an earlier dump of the same
// process) also their growth since it.
func NewReport(sym *Symbolizer, d, base *Dump) *Report {
	r := &Report{PID: d.PID, Rate: d.Rate, Time: d.Time, Samples: d.Samples, Dropped: d.Dropped}
	cur := sites(sym, d)
	for _, s := range cur {
		r.InUseBytes += s.InUseBytes
	}
	for _, s := range cur {
		if s.InUseBytes <= 0 {
			continue // all freed: not a site that holds memory
		}
		if r.InUseBytes > 0 {
			s.Share = float64(s.InUseBytes) / float64(r.InUseBytes)
		}
		r.Sites = append(r.Sites, *s)
	}
	slices.SortFunc(r.Sites, func(a, b Site) int {
		return cmp.Or(cmp.Compare(b.InUseBytes, a.InUseBytes), cmp.Compare(a.key, b.key))
	})
	if base == nil {
		return r
	}
	r.Base = base.Time
	old := sites(sym, base)
	for i := range r.Sites {
		s := &r.Sites[i]
		g := s.InUseBytes
		if o := old[s.key]; o != nil {
			g -= o.InUseBytes
		}
		s.GrowthBytes = g
		r.GrowthBytes += g
		if g > 0 {
			r.Growth = append(r.Growth, *s)
		}
	}
	for k, o := range old {
		if cur[k] == nil {
			r.GrowthBytes -= o.InUseBytes
		}
	}
	slices.SortFunc(r.Growth, func(a, b Site) int {
		return cmp.Or(cmp.Compare(b.GrowthBytes, a.GrowthBytes), cmp.Compare(a.key, b.key))
	})
	return r
}

// Profile converts d to a pprof heap profile (the sample types of Go's:
// alloc_objects, alloc_space, inuse_objects, inuse_space), its functions
// named by sym. The library's own frames are left out.
func Profile(sym *Symbolizer, d *Dump) *Pprof {
	p := &Pprof{
		SampleTypes:       [][2]string{{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}},
		DefaultSampleType: "inuse_space",
		PeriodType:        [2]string{"space", "bytes"},
		Period:            int64(d.Rate),
		TimeNanos:         d.Time.UnixNano(),
	}
	maps := map[uint64]uint64{}  // a mapping's start: its ID
	funcs := map[string]uint64{} // a function's name and object: its ID
	locs := map[uint64]uint64{}  // an address: its location's ID
	for _, s := range d.Stacks {
		smp := PprofSample{Values: []int64{s.AllocObjects, s.AllocBytes, s.InUseObjects, s.InUseBytes}}
		for _, f := range frames(sym, d, s) {
			loc := locs[f.PC]
			if loc == 0 {
				l := PprofLocation{ID: uint64(len(p.Locations) + 1), Address: f.PC}
				if f.Mapping != nil {
					m := maps[f.Mapping.Start]
					if m == 0 {
						m = uint64(len(p.Mappings) + 1)
						p.Mappings = append(p.Mappings, PprofMapping{ID: m, Start: f.Mapping.Start,
							Limit: f.Mapping.End, Offset: f.Mapping.Offset, File: f.Object, HasFunctions: true})
						maps[f.Mapping.Start] = m
					}
					l.Mapping = m
				}
				name := f.Name()
				fn := funcs[name+"\x00"+f.Object]
				if fn == 0 {
					// With DWARF the function's file is its source file
					// (pprof -lines prints it with each line), else the object.
					file := f.Object
					if f.File != "" {
						file = f.File
					}
					fn = uint64(len(p.Functions) + 1)
					p.Functions = append(p.Functions, PprofFunction{ID: fn, Name: name, SystemName: name, File: file})
					funcs[name+"\x00"+f.Object] = fn
				}
				l.Function, l.Line = fn, int64(f.Line)
				loc = l.ID
				locs[f.PC] = loc
				p.Locations = append(p.Locations, l)
			}
			smp.Locations = append(smp.Locations, loc)
		}
		p.Samples = append(p.Samples, smp)
	}
	return p
}
