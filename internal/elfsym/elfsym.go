// Package elfsym reads the symbol table of an ELF object that a target
// process maps (its libraries, its executable): files memdoctor does not
// control. debug/elf copies every symbol's name into its own string, so a
// table whose entries all point at one huge string grows to entries × its
// size (1,500 entries naming one 1 MiB string: 1.5 GB). Here the string
// table is read once, names are slices of it (never copies), a name is at
// most MaxName bytes, the names looked at add up to at most MaxNames
// bytes, the entries to at most MaxSymbols, and the whole read to Budget
// of time and the caller's context; past any bound the object is refused
// with an error that says which.
package elfsym

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// ErrBound is wrapped by the error of an object that exceeds a bound.
var ErrBound = errors.New("the symbol table exceeds what memdoctor reads")

// ErrNoTable is returned for an object without a symbol table of the kind asked.
var ErrNoTable = errors.New("no symbol table")

// Limits bound one read.
type Limits struct {
	MaxSymbols int           // entries in the table
	MaxTable   int64         // bytes of the string table
	MaxName    int           // bytes of one name
	MaxNames   int64         // bytes of all the names looked at
	Budget     time.Duration // time for the whole read
}

// Default is what a real object needs: glibc's .symtab has about 3,000
// entries and 50 KiB of names, a large C++ program's a few million and
// some hundred MiB of names (a mangled name is rarely over 4 KiB).
var Default = Limits{
	MaxSymbols: 4 << 20,
	MaxTable:   256 << 20,
	MaxName:    64 << 10,
	MaxNames:   512 << 20,
	Budget:     20 * time.Second,
}

// Symbol is one entry of the table. Name is a slice of the table's
// strings (it keeps them in memory while it lives).
type Symbol struct {
	Name    string
	Info    byte
	Other   byte
	Section elf.SectionIndex
	Value   uint64
	Size    uint64
	// Hidden: a .dynsym entry whose version is not the default one
	// (name@VERSION, kept for old binaries).
	Hidden bool
}

// Type is the symbol's type (elf.STT_FUNC, ...).
func (s Symbol) Type() elf.SymType { return elf.ST_TYPE(s.Info) }

// Func reports whether s is a defined function at a nonzero address.
func (s Symbol) Func() bool {
	return s.Type() == elf.STT_FUNC && s.Value != 0 && s.Section != elf.SHN_UNDEF
}

// Read returns the entries of ef's table of type typ (elf.SHT_SYMTAB or
// elf.SHT_DYNSYM) that keep accepts, with their names, and never more
// than the limits allow; keep sees each entry before its name is read
// (Name is ""). A nil keep takes every entry but the first (the null
// symbol).
func Read(ctx context.Context, ef *elf.File, typ elf.SectionType, lim Limits, keep func(*Symbol) bool) (out []Symbol, err error) {
	return read(ctx, ef, typ, lim, keep, nil)
}

// read is Read; with names not nil it returns only the entries named one
// of them (every name still read within the bounds).
func read(ctx context.Context, ef *elf.File, typ elf.SectionType, lim Limits, keep func(*Symbol) bool, names []string) (out []Symbol, err error) {
	defer func() {
		// debug/elf's section readers on a hostile file: never a panic.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("malformed ELF symbol table: %v", r)
		}
	}()
	var sec *elf.Section
	for _, s := range ef.Sections {
		if s.Type == typ {
			sec = s
			break
		}
	}
	if sec == nil {
		return nil, ErrNoTable
	}
	if sec.Flags&elf.SHF_COMPRESSED != 0 || sec.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("%s is compressed or empty in the file, which a symbol table never is", sec.Name)
	}
	var entSize uint64
	switch ef.Class {
	case elf.ELFCLASS64:
		entSize = 24
	case elf.ELFCLASS32:
		entSize = 16
	default:
		return nil, fmt.Errorf("ELF class %v", ef.Class)
	}
	if sec.Size%entSize != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not a whole number of %d-byte entries", sec.Name, sec.Size, entSize)
	}
	n := sec.Size / entSize
	if n > uint64(lim.MaxSymbols) {
		return nil, fmt.Errorf("%w: %s has %d entries, more than %d", ErrBound, sec.Name, n, lim.MaxSymbols)
	}
	if int(sec.Link) <= 0 || int(sec.Link) >= len(ef.Sections) {
		return nil, fmt.Errorf("%s: its string table is section %d of %d", sec.Name, sec.Link, len(ef.Sections))
	}
	strSec := ef.Sections[sec.Link]
	if strSec.Type != elf.SHT_STRTAB {
		return nil, fmt.Errorf("%s: section %d is not a string table", sec.Name, sec.Link)
	}
	if strSec.Size > uint64(lim.MaxTable) {
		return nil, fmt.Errorf("%w: %s has %d bytes of names, more than %d MiB", ErrBound, strSec.Name, strSec.Size, lim.MaxTable>>20)
	}
	deadline := time.Now().Add(lim.Budget)
	strs, err := readSection(strSec, strSec.Size)
	if err != nil {
		return nil, err
	}
	// One string over the table: names are slices of it, never copies.
	table := unsafe.String(unsafe.SliceData(strs), len(strs))

	var versions []byte
	if typ == elf.SHT_DYNSYM {
		for _, s := range ef.Sections {
			if s.Type == elf.SHT_GNU_VERSYM && s.Size == 2*n {
				if versions, err = readSection(s, 2*n); err != nil {
					versions = nil
				}
				break
			}
		}
	}

	r := io.NewSectionReader(sec, 0, int64(sec.Size))
	buf := make([]byte, min(n, 4096)*entSize) // a small table: no more than it holds
	var named int64
	var seen Symbol
	for i := uint64(0); i < n; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s not read within %s (%d of %d entries)", ErrBound, sec.Name, lim.Budget, i, n)
		}
		k := min(n-i, uint64(len(buf))/entSize)
		chunk := buf[:k*entSize]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, fmt.Errorf("%s: %w", sec.Name, err)
		}
		for j := uint64(0); j < k; j, i = j+1, i+1 {
			if i == 0 {
				continue // the null symbol
			}
			s, nameOff := decode(ef.Class, ef.ByteOrder, chunk[j*entSize:])
			if versions != nil {
				s.Hidden = ef.ByteOrder.Uint16(versions[2*i:])&0x8000 != 0
			}
			if keep != nil {
				// keep sees one variable for every entry: its
				// address escapes, and a Symbol made on the heap for
				// each entry was most of a lookup's allocation.
				seen = s
				if !keep(&seen) {
					continue
				}
				s = seen
			}
			if nameOff > 0 {
				if uint64(nameOff) >= uint64(len(table)) {
					return nil, fmt.Errorf("%s: entry %d names offset %d of a %d-byte string table", sec.Name, i, nameOff, len(table))
				}
				rest := table[nameOff:min(len(table), int(nameOff)+lim.MaxName+1)]
				end := strings.IndexByte(rest, 0)
				if end < 0 {
					if len(rest) > lim.MaxName {
						return nil, fmt.Errorf("%w: %s entry %d has a name over %d KiB", ErrBound, sec.Name, i, lim.MaxName>>10)
					}
					return nil, fmt.Errorf("%s: entry %d names a string that runs off the table", sec.Name, i)
				}
				named += int64(end)
				if named > lim.MaxNames {
					return nil, fmt.Errorf("%w: %s names add up to more than %d MiB", ErrBound, sec.Name, lim.MaxNames>>20)
				}
				s.Name = rest[:end]
			}
			if names != nil && !slices.Contains(names, s.Name) {
				continue // measured and bounded as any name, not kept
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// Functions reads the defined functions of ef's .symtab, else of its
// .dynsym (a stripped object).
func Functions(ctx context.Context, ef *elf.File, lim Limits) ([]Symbol, error) {
	keep := func(s *Symbol) bool { return s.Func() }
	out, err := Read(ctx, ef, elf.SHT_SYMTAB, lim, keep)
	if err == nil && len(out) > 0 {
		return out, nil
	}
	if err != nil && !errors.Is(err, ErrNoTable) {
		return nil, err
	}
	return Read(ctx, ef, elf.SHT_DYNSYM, lim, keep)
}

// Exported finds the named functions among ef's .dynsym entries of default
// version (what the dynamic linker binds): name -> symbol, the absent
// names missing. Only the entries asked for are kept: a C++ library's
// thousands of functions were each made a Symbol on the heap, kept and
// then hashed into a map, to find malloc (a third of check's CPU).
// An object with a GNU hash table (every one a linker of this century
// wrote) is looked up through it (exportedByHash); others entry by entry.
func Exported(ctx context.Context, ef *elf.File, lim Limits, names ...string) (map[string]Symbol, error) {
	if names == nil {
		names = []string{}
	}
	if out, ok, err := exportedByHash(ctx, ef, lim, names); ok {
		return out, err
	}
	return exportedLinear(ctx, ef, lim, names)
}

// exportedLinear is Exported entry by entry.
func exportedLinear(ctx context.Context, ef *elf.File, lim Limits, names []string) (map[string]Symbol, error) {
	syms, err := read(ctx, ef, elf.SHT_DYNSYM, lim, func(s *Symbol) bool { return s.Func() && !s.Hidden }, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Symbol, len(names))
	for _, s := range syms {
		out[s.Name] = s
	}
	return out, nil
}

func decode(class elf.Class, bo binary.ByteOrder, b []byte) (Symbol, uint32) {
	if class == elf.ELFCLASS64 {
		return Symbol{Info: b[4], Other: b[5], Section: elf.SectionIndex(bo.Uint16(b[6:])),
			Value: bo.Uint64(b[8:]), Size: bo.Uint64(b[16:])}, bo.Uint32(b)
	}
	return Symbol{Value: uint64(bo.Uint32(b[4:])), Size: uint64(bo.Uint32(b[8:])),
		Info: b[12], Other: b[13], Section: elf.SectionIndex(bo.Uint16(b[14:]))}, bo.Uint32(b)
}

// readSection reads a section's bytes, at most size of them, without
// trusting the size its header states beyond that.
func readSection(s *elf.Section, size uint64) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("%s has no bytes in the file", s.Name)
	}
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		return nil, fmt.Errorf("%s is compressed, which a symbol table never is", s.Name)
	}
	// Read as the bytes come, in one buffer of the stated size up to
	// sectionChunk and doubling past it: a header that claims more than
	// the file holds costs at most twice what the file holds (io.ReadAll
	// grew its buffer from 512 bytes, some 3.5 times a table's size in
	// allocations).
	r := io.NewSectionReader(s, 0, int64(size))
	b := make([]byte, min(size, sectionChunk))
	for done := 0; ; {
		n, err := io.ReadFull(r, b[done:])
		done += n
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%s: %d of its %d bytes in the file", s.Name, done, size)
			}
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		if uint64(done) == size {
			return b, nil
		}
		b = append(b, make([]byte, min(size-uint64(done), uint64(len(b))))...)
	}
}

// sectionChunk is how much of a section readSection allocates before
// the file has shown it holds more.
const sectionChunk = 4 << 20
