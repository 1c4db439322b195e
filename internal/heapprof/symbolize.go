package heapprof

import (
	"context"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/elfsym"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Frame is one symbolized address.
type Frame struct {
	PC       uint64
	Function string // "" when no symbol covers it
	Object   string // the mapped file, "" when the address is in none
	Mapping  *procfs.Mapping
	File     string // the source file of the call, from DWARF; "" when unknown
	Line     int    // its line, 0 when unknown
}

// Position is "file.c:123" (the file's base name), "" without line info.
func (f Frame) Position() string {
	if f.Line == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d", shortFile(f.File), f.Line)
}

// Name is the function, or object+offset, or the address.
func (f Frame) Name() string {
	switch {
	case f.Function != "":
		return f.Function
	case f.Mapping != nil:
		return fmt.Sprintf("%s+0x%x", path.Base(f.Object), f.PC-f.Mapping.Start+f.Mapping.Offset)
	}
	return fmt.Sprintf("0x%x", f.PC)
}

// OpenFunc opens the file behind a mapping (for a live process: its
// map_files entry or the path in its root, checked against the mapping).
type OpenFunc func(m procfs.Mapping) (*os.File, error)

// Symbolizer names addresses from the ELF symbol tables (.symtab, else
// .dynsym) of the files the process mapped, and gives their source lines
// from DWARF where the file or its separate debug file has it (dwarf.go);
// each file is read once.
type Symbolizer struct {
	ctx     context.Context
	open    OpenFunc
	objects map[string]*object
	lines   map[string]*lineInfo // by build ID, else by the object's key
	noLines bool
}

type object struct {
	key     string
	syms    []elfsym.Symbol // functions, by address
	loads   []elf.ProgHeader
	err     error
	buildID string
	link    string // .gnu_debuglink
	linkCRC uint32 // and the CRC-32 of the file it names
	dwarf   bool   // the file has line tables itself
	path    string
	mapping procfs.Mapping
}

// NewSymbolizer returns a symbolizer that opens files with open.
func NewSymbolizer(open OpenFunc) *Symbolizer {
	return &Symbolizer{ctx: context.Background(), open: open, objects: map[string]*object{}, lines: map[string]*lineInfo{}}
}

// SetContext ends the symbolizer's work when ctx ends: the frames still
// to name are left as addresses.
func (s *Symbolizer) SetContext(ctx context.Context) { s.ctx = ctx }

// SetLines turns the DWARF line lookup on (the default) or off.
func (s *Symbolizer) SetLines(on bool) { s.noLines = !on }

// maxObject bounds the file read (the target's files are not trusted).
const maxObject = 1 << 30

func (s *Symbolizer) object(m procfs.Mapping) *object {
	key := fmt.Sprintf("%s %d %s", m.Dev, m.Inode, m.Path)
	if o, ok := s.objects[key]; ok {
		return o
	}
	o := &object{key: key, path: strings.TrimSuffix(m.Path, " (deleted)"), mapping: m}
	if err := s.ctx.Err(); err != nil {
		o.err = err // not cached: a later symbolizer may read it
		return o
	}
	s.objects[key] = o
	defer func() {
		// debug/elf on a hostile file: a parse that panics names nothing.
		if r := recover(); r != nil {
			o.syms, o.loads, o.err = nil, nil, fmt.Errorf("%s: malformed ELF file: %v", m.Path, r)
		}
	}()
	f, err := s.open(m)
	if err != nil {
		o.err = err
		return o
	}
	defer func() { _ = f.Close() }() // read-only
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxObject {
		o.err = fmt.Errorf("%s: not a regular file of sane size", m.Path)
		return o
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		o.err = err
		return o
	}
	defer func() { _ = ef.Close() }()
	// The target's file: its symbols are read within bounds (a table of
	// entries naming one huge string is refused, not expanded).
	if o.syms, err = elfsym.Functions(s.ctx, ef, elfsym.Default); err != nil && !errors.Is(err, elfsym.ErrNoTable) {
		o.syms, o.err = nil, fmt.Errorf("%s: %w", m.Path, err)
		return o
	}
	sort.Slice(o.syms, func(i, j int) bool { return o.syms[i].Value < o.syms[j].Value })
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			o.loads = append(o.loads, p.ProgHeader)
		}
	}
	o.buildID, o.dwarf = readBuildID(ef), hasDWARF(ef)
	o.link, o.linkCRC = debugLink(ef)
	return o
}

// lineInfo returns the DWARF of o, read on first use: the file's own, else
// its separate debug file's; nil when neither has line tables.
func (s *Symbolizer) lineInfo(o *object) *lineInfo {
	key := o.buildID
	if key == "" {
		key = o.key
	}
	if li, ok := s.lines[key]; ok {
		return li
	}
	li := &lineInfo{units: map[dwarf.Offset]*unitLines{}}
	s.lines[key] = li
	if o.dwarf {
		li.data = s.ownDWARF(o)
	}
	if li.data == nil {
		li.data, _ = openDebugFile(debugFileCandidates(o.path, o.buildID, o.link), o.buildID, o.linkCRC)
	}
	return li
}

// ownDWARF reads the DWARF sections of the mapped file itself.
func (s *Symbolizer) ownDWARF(o *object) (d *dwarf.Data) {
	defer func() {
		if r := recover(); r != nil {
			d = nil
		}
	}()
	f, err := s.open(o.mapping)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }() // read-only
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil
	}
	d, err = loadDWARF(ef)
	if err != nil {
		return nil
	}
	return d
}

// Frame names pc, a return address (the call is the byte before it) in
// the process whose mappings are maps.
func (s *Symbolizer) Frame(maps []procfs.Mapping, pc uint64) Frame {
	fr := Frame{PC: pc}
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > pc })
	if i == len(maps) || maps[i].Start > pc || !strings.HasPrefix(maps[i].Path, "/") {
		return fr
	}
	m := maps[i]
	fr.Mapping = &maps[i]
	fr.Object = strings.TrimSuffix(m.Path, " (deleted)")
	o := s.object(m)
	if o.err != nil {
		return fr
	}
	// The load bias: file offset -> the address the ELF file was linked for.
	off := pc - 1 - m.Start + m.Offset
	for _, p := range o.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			v := off - p.Off + p.Vaddr
			j := sort.Search(len(o.syms), func(j int) bool { return o.syms[j].Value > v }) - 1
			if j >= 0 && (o.syms[j].Size == 0 || v < o.syms[j].Value+o.syms[j].Size) {
				fr.Function = o.syms[j].Name
			}
			if !s.noLines && s.ctx.Err() == nil {
				fr.File, fr.Line = s.lineInfo(o).line(v)
			}
			break
		}
	}
	return fr
}
