package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"sync"
	"unsafe"
)

// Sections reads itself a section table of at most maxSectionTable bytes
// (1,024 entries of 64 bytes; a real object has under 100) and a name
// table of at most maxSectionNames (a real one is a few hundred bytes),
// each read whole into a buffer of the size the header states; larger
// ones go to debug/elf, which reads a claimed size as the bytes come.
const (
	maxSectionTable = 64 << 10
	maxSectionNames = 64 << 10
)

// Sections parses an ELF file's header and section table, and nothing
// else, into the *elf.File debug/elf.NewFile would return: the same
// FileHeader and the same Sections (headers, names, sizes), but no Progs,
// and sections read only through ReadAt (their Data and Open are not set
// up; a compressed section, as with debug/elf, has no ReadAt either).
//
// debug/elf.NewFile also reads every program header and makes two
// objects and a name string for each section: for the 15-40 objects
// check names the allocator of, half of all their reading cost (a table
// of 40 sections is some 90 small allocations, here 5). Anything unusual
// (no section table, an extended count or index, a name table that is
// compressed, too large or malformed, a short read) is handed to
// elf.NewFile, whose answer, a file or an error, is returned as it is.
func Sections(r io.ReaderAt) (*elf.File, error) {
	if f, ok := sections(r, &sectionBufs{}); ok {
		return f, nil
	}
	return elf.NewFile(r)
}

// SectionsReuse is Sections building the file in buffers that release
// gives back for the next call: release is called once neither the file
// nor anything taken from it is used any more, its sections' names
// included (they are read in one of those buffers). Check reads the
// sections of a few dozen objects, one after the other, some 12 KiB
// each.
func SectionsReuse(r io.ReaderAt) (f *elf.File, release func(), err error) {
	b := sectionPool.Get().(*sectionBufs)
	if f, ok := sections(r, b); ok {
		return f, func() { b.clear(); sectionPool.Put(b) }, nil
	}
	sectionPool.Put(b)
	f, err = elf.NewFile(r)
	return f, func() {}, err
}

// sectionBufs is what sections builds a file in.
type sectionBufs struct {
	f       elf.File
	table   []byte
	secs    []elf.Section
	readers []io.SectionReader
	names   []uint32
	ptrs    []*elf.Section
	raw     []byte
}

var sectionPool = sync.Pool{New: func() any { return new(sectionBufs) }}

// clear drops what the buffers point to (the file read, its reader).
func (b *sectionBufs) clear() {
	b.f = elf.File{}
	clear(b.secs)
	clear(b.readers)
	clear(b.ptrs)
}

// grow returns buf's first n elements, from a new array when it is
// shorter.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

func sections(r io.ReaderAt, b *sectionBufs) (*elf.File, bool) {
	var hdr [64]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, false // a header shorter than 64 bytes: a 32-bit one, or none
	}
	if !bytes.Equal(hdr[:4], []byte(elf.ELFMAG)) || elf.Version(hdr[elf.EI_VERSION]) != elf.EV_CURRENT {
		return nil, false
	}
	b.f = elf.File{}
	f := &b.f
	f.Class, f.Data = elf.Class(hdr[elf.EI_CLASS]), elf.Data(hdr[elf.EI_DATA])
	f.Version, f.OSABI, f.ABIVersion = elf.EV_CURRENT, elf.OSABI(hdr[elf.EI_OSABI]), hdr[elf.EI_ABIVERSION]
	var bo binary.ByteOrder
	switch f.Data {
	case elf.ELFDATA2LSB:
		bo = binary.LittleEndian
	case elf.ELFDATA2MSB:
		bo = binary.BigEndian
	default:
		return nil, false
	}
	f.ByteOrder = bo
	f.Type, f.Machine = elf.Type(bo.Uint16(hdr[16:])), elf.Machine(bo.Uint16(hdr[18:]))
	var shoff uint64
	var shentsize, shnum, shstrndx, want int
	switch f.Class {
	case elf.ELFCLASS64:
		if elf.Version(bo.Uint32(hdr[20:])) != elf.EV_CURRENT {
			return nil, false
		}
		f.Entry = bo.Uint64(hdr[24:])
		shoff = bo.Uint64(hdr[40:])
		shentsize, shnum, shstrndx = int(bo.Uint16(hdr[58:])), int(bo.Uint16(hdr[60:])), int(bo.Uint16(hdr[62:]))
		want = 64
	case elf.ELFCLASS32:
		if elf.Version(bo.Uint32(hdr[20:])) != elf.EV_CURRENT {
			return nil, false
		}
		f.Entry = uint64(bo.Uint32(hdr[24:]))
		shoff = uint64(bo.Uint32(hdr[32:]))
		shentsize, shnum, shstrndx = int(bo.Uint16(hdr[46:])), int(bo.Uint16(hdr[48:])), int(bo.Uint16(hdr[50:]))
		want = 40
	default:
		return nil, false
	}
	// debug/elf's checks of the program headers are left to it: a file
	// it refuses for them alone is read here, within the same bounds.
	if shoff == 0 || int64(shoff) < 0 || shnum == 0 || shnum >= int(elf.SHN_LORESERVE) ||
		shstrndx == 0 || shstrndx >= shnum || shentsize != want || shnum*shentsize > maxSectionTable {
		return nil, false
	}
	b.table = grow(b.table, shnum*shentsize)
	table := b.table
	if _, err := r.ReadAt(table, int64(shoff)); err != nil {
		return nil, false
	}
	b.secs, b.readers, b.names, b.ptrs = grow(b.secs, shnum), grow(b.readers, shnum), grow(b.names, shnum), grow(b.ptrs, shnum)
	secs, readers, names := b.secs, b.readers, b.names
	f.Sections = b.ptrs
	for i := range secs {
		b := table[i*shentsize:]
		s := &secs[i]
		*s = elf.Section{}
		names[i] = bo.Uint32(b)
		if f.Class == elf.ELFCLASS64 {
			s.SectionHeader = elf.SectionHeader{Type: elf.SectionType(bo.Uint32(b[4:])), Flags: elf.SectionFlag(bo.Uint64(b[8:])),
				Addr: bo.Uint64(b[16:]), Offset: bo.Uint64(b[24:]), FileSize: bo.Uint64(b[32:]), Link: bo.Uint32(b[40:]),
				Info: bo.Uint32(b[44:]), Addralign: bo.Uint64(b[48:]), Entsize: bo.Uint64(b[56:])}
		} else {
			s.SectionHeader = elf.SectionHeader{Type: elf.SectionType(bo.Uint32(b[4:])), Flags: elf.SectionFlag(bo.Uint32(b[8:])),
				Addr: uint64(bo.Uint32(b[12:])), Offset: uint64(bo.Uint32(b[16:])), FileSize: uint64(bo.Uint32(b[20:])), Link: bo.Uint32(b[24:]),
				Info: bo.Uint32(b[28:]), Addralign: uint64(bo.Uint32(b[32:])), Entsize: uint64(bo.Uint32(b[36:]))}
		}
		if int64(s.Offset) < 0 || int64(s.FileSize) < 0 {
			return nil, false
		}
		readers[i] = *io.NewSectionReader(r, int64(s.Offset), int64(s.FileSize))
		if s.Flags&elf.SHF_COMPRESSED == 0 {
			s.ReaderAt = &readers[i]
			s.Size = s.FileSize
		} else if !compressedSize(&readers[i], f.Class, bo, s) {
			return nil, false
		}
		f.Sections[i] = s
	}
	shstr := &secs[shstrndx]
	if shstr.Type != elf.SHT_STRTAB || shstr.Flags&elf.SHF_COMPRESSED != 0 || shstr.FileSize > maxSectionNames {
		return nil, false
	}
	b.raw = grow(b.raw, int(shstr.FileSize))
	raw := b.raw
	if _, err := readers[shstrndx].ReadAt(raw, 0); err != nil {
		return nil, false
	}
	// One string, a view of raw; each name is a slice of it (valid as
	// long as raw is not reused: SectionsReuse's buffers until released,
	// Sections' for good).
	strs := unsafe.String(unsafe.SliceData(raw), len(raw))
	for i := range secs {
		start := int(names[i])
		if start >= len(strs) {
			return nil, false
		}
		end := bytes.IndexByte(raw[start:], 0)
		if end < 0 {
			return nil, false
		}
		secs[i].Name = strs[start : start+end]
	}
	return f, true
}

// compressedSize sets a compressed section's Size and Addralign from its
// compression header, as debug/elf does.
func compressedSize(sr *io.SectionReader, class elf.Class, bo binary.ByteOrder, s *elf.Section) bool {
	var ch [24]byte
	n := 24
	if class == elf.ELFCLASS32 {
		n = 12
	}
	if _, err := sr.ReadAt(ch[:n], 0); err != nil {
		return false
	}
	if class == elf.ELFCLASS64 {
		s.Size, s.Addralign = bo.Uint64(ch[8:]), bo.Uint64(ch[16:])
	} else {
		s.Size, s.Addralign = uint64(bo.Uint32(ch[4:])), uint64(bo.Uint32(ch[8:]))
	}
	return true
}
