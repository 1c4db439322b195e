package heapprof

import (
	"cmp"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

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
func Profile(sym *Symbolizer, d *Dump) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"},
			{Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"},
			{Type: "inuse_space", Unit: "bytes"},
		},
		DefaultSampleType: "inuse_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            int64(d.Rate),
		TimeNanos:         d.Time.UnixNano(),
	}
	maps := map[uint64]*profile.Mapping{}
	funcs := map[string]*profile.Function{}
	locs := map[uint64]*profile.Location{}
	for _, s := range d.Stacks {
		smp := &profile.Sample{Value: []int64{s.AllocObjects, s.AllocBytes, s.InUseObjects, s.InUseBytes}}
		for _, f := range frames(sym, d, s) {
			loc := locs[f.PC]
			if loc == nil {
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Address: f.PC}
				if f.Mapping != nil {
					m := maps[f.Mapping.Start]
					if m == nil {
						m = &profile.Mapping{ID: uint64(len(p.Mapping) + 1), Start: f.Mapping.Start,
							Limit: f.Mapping.End, Offset: f.Mapping.Offset, File: f.Object, HasFunctions: true}
						maps[f.Mapping.Start] = m
						p.Mapping = append(p.Mapping, m)
					}
					loc.Mapping = m
				}
				name := f.Name()
				fn := funcs[name+"\x00"+f.Object]
				if fn == nil {
					// With DWARF the function's file is its source file
					// (pprof -lines prints it with each line), else the object.
					file := f.Object
					if f.File != "" {
						file = f.File
					}
					fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file}
					funcs[name+"\x00"+f.Object] = fn
					p.Function = append(p.Function, fn)
				}
				loc.Line = []profile.Line{{Function: fn, Line: int64(f.Line)}}
				locs[f.PC] = loc
				p.Location = append(p.Location, loc)
			}
			smp.Location = append(smp.Location, loc)
		}
		p.Sample = append(p.Sample, smp)
	}
	return p
}
