package elfsym

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"time"
)

// maxHashTable bounds the .gnu.hash section read whole: a table of a few
// million symbols, never what a real object needs (glibc's is 18 KiB,
// libstdc++'s 36 KiB).
const maxHashTable = 64 << 20

// bloomFirst is how much of a .gnu.hash section is read first: its header
// and a Bloom filter of up to 510 words of 8 bytes (a large library's is
// 256), the whole section when smaller.
const bloomFirst = 4 << 10

// exportedByHash is Exported through the object's GNU hash table, as the
// dynamic linker looks a name up: the table is read whole (bounded), and
// for each name only the entries of its hash chain whose hash matches are
// read, with their name and version, a few dozen bytes each. A linear
// lookup read every entry and the whole string table (460 KiB of
// libstdc++'s for eight names). ok is false when the object has no such
// table or one that does not hold together (then the caller reads the
// entries one by one, within its own bounds); the symbols found are those
// the linear lookup finds in a table a linker wrote, where every defined
// symbol is hashed.
func exportedByHash(ctx context.Context, ef *elf.File, lim Limits, names []string) (out map[string]Symbol, ok bool, err error) {
	defer func() {
		// debug/elf's section readers on a hostile file: never a panic.
		if r := recover(); r != nil {
			out, ok, err = nil, false, nil
		}
	}()
	var dynsym, hash *elf.Section
	dynIdx := -1
	for i, s := range ef.Sections {
		if s.Type == elf.SHT_DYNSYM && dynsym == nil {
			dynsym, dynIdx = s, i
		}
	}
	if dynsym == nil {
		return nil, false, nil
	}
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_GNU_HASH && int(s.Link) == dynIdx {
			hash = s
			break
		}
	}
	if hash == nil || hash.Size < 16 || hash.Size > maxHashTable || dynsym.Flags&elf.SHF_COMPRESSED != 0 {
		return nil, false, nil
	}
	var entSize, word uint64
	switch ef.Class {
	case elf.ELFCLASS64:
		entSize, word = 24, 8
	case elf.ELFCLASS32:
		entSize, word = 16, 4
	default:
		return nil, false, nil
	}
	if dynsym.Size%entSize != 0 || int(dynsym.Link) <= 0 || int(dynsym.Link) >= len(ef.Sections) {
		return nil, false, nil
	}
	n := dynsym.Size / entSize
	if n > uint64(lim.MaxSymbols) {
		return nil, false, nil // the linear lookup says which bound
	}
	strs := ef.Sections[dynsym.Link]
	if strs.Type != elf.SHT_STRTAB {
		return nil, false, nil
	}
	var versions *elf.Section
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_GNU_VERSYM && s.Size == 2*n {
			versions = s
			break
		}
	}
	// The header and the Bloom filter first (a few hundred bytes): an
	// object that defines none of the names, most of those on the way to
	// the one that defines malloc, is known from them, without reading
	// its buckets and chains (36 KiB of libstdc++'s).
	bo := ef.ByteOrder
	data, err := readSection(hash, min(hash.Size, bloomFirst))
	if err != nil {
		return nil, false, nil
	}
	nbuckets, symoffset := uint64(bo.Uint32(data)), uint64(bo.Uint32(data[4:]))
	bloom, shift := uint64(bo.Uint32(data[8:])), uint64(bo.Uint32(data[12:]))
	bucketsAt := 16 + bloom*word
	chainAt := bucketsAt + 4*nbuckets
	if nbuckets == 0 || bloom > hash.Size || nbuckets > hash.Size || chainAt > hash.Size {
		return nil, false, nil
	}
	if bloom > 0 && bloom&(bloom-1) == 0 && bucketsAt <= uint64(len(data)) {
		// A name whose two bits are not both set in its word is not in
		// the table: what the dynamic linker checks first, with a filter
		// of a power of two words (its index masked, as here; another
		// size is read whole).
		bits := 8 * word
		maybe := false
		for _, want := range names {
			h := uint64(gnuHash(want))
			i := 16 + word*((h/bits)&(bloom-1))
			var w uint64
			if word == 8 {
				w = bo.Uint64(data[i:])
			} else {
				w = uint64(bo.Uint32(data[i:]))
			}
			if m := uint64(1)<<(h%bits) | uint64(1)<<((h>>shift)%bits); w&m == m {
				maybe = true
				break
			}
		}
		if !maybe {
			return map[string]Symbol{}, true, nil
		}
	}
	// Past the bytes read first, the buckets and chains are read a piece
	// at a time where the names lead (a library's whole table was read
	// for a name its filter let by, for nothing most times).
	tab := hashWords{sec: hash, bo: bo, data: data}
	nchain := (hash.Size - chainAt) / 4
	deadline := time.Now().Add(lim.Budget)
	out = make(map[string]Symbol, len(names))
	ent := make([]byte, entSize)
	var name []byte
	for _, want := range names {
		if _, done := out[want]; done {
			continue
		}
		h := gnuHash(want)
		b, ok := tab.u32(bucketsAt + 4*(uint64(h)%nbuckets))
		if !ok {
			return nil, false, nil
		}
		i := uint64(b)
		if i == 0 {
			continue // no symbol has this hash
		}
		if i < symoffset {
			return nil, false, nil
		}
		var found *Symbol
		for ; i < n && i-symoffset < nchain; i++ {
			if err := ctx.Err(); err != nil {
				return nil, true, err
			}
			if i%4096 == 0 && time.Now().After(deadline) {
				return nil, true, fmt.Errorf("%w: %s not read within %s", ErrBound, dynsym.Name, lim.Budget)
			}
			hv, ok := tab.u32(chainAt + 4*(i-symoffset))
			if !ok {
				return nil, false, nil
			}
			if hv|1 == h|1 {
				if s, match := hashEntry(ef.Class, bo, dynsym, strs, versions, i, ent, &name, want); match {
					found = &s
				}
			}
			if hv&1 != 0 {
				break // the chain's last entry
			}
		}
		if found != nil {
			out[want] = *found
		}
	}
	return out, true, nil
}

// hashWords reads the 32-bit words of a .gnu.hash section: from the bytes
// read first, else from a piece of hashPiece bytes read where the word is.
type hashWords struct {
	sec     *elf.Section
	bo      binary.ByteOrder
	data    []byte // the section's first bytes
	piece   []byte
	pieceAt uint64
}

// hashPiece is how much of a section hashWords reads past its first bytes
// at a time: a chain's words, most of them a few.
const hashPiece = 512

func (t *hashWords) u32(off uint64) (uint32, bool) {
	if off+4 <= uint64(len(t.data)) {
		return t.bo.Uint32(t.data[off:]), true
	}
	if off+4 > t.sec.Size {
		return 0, false
	}
	if off < t.pieceAt || off+4 > t.pieceAt+uint64(len(t.piece)) {
		if t.piece == nil {
			t.piece = make([]byte, hashPiece)
		}
		t.pieceAt = off &^ 3
		t.piece = t.piece[:min(uint64(cap(t.piece)), t.sec.Size-t.pieceAt)]
		if _, err := t.sec.ReadAt(t.piece, int64(t.pieceAt)); err != nil {
			t.piece = t.piece[:0]
			return 0, false
		}
	}
	return t.bo.Uint32(t.piece[off-t.pieceAt:]), true
}

// hashEntry reads entry i of dynsym and reports it if it is named want
// and is a defined function of the default version (what Exported keeps).
func hashEntry(class elf.Class, bo binary.ByteOrder, dynsym, strs, versions *elf.Section, i uint64, ent []byte, name *[]byte, want string) (Symbol, bool) {
	if _, err := dynsym.ReadAt(ent, int64(i*uint64(len(ent)))); err != nil {
		return Symbol{}, false
	}
	s, off := decode(class, bo, ent)
	if off == 0 || uint64(off)+uint64(len(want)) >= strs.Size {
		return Symbol{}, false
	}
	if cap(*name) < len(want)+1 {
		*name = make([]byte, len(want)+1)
	}
	b := (*name)[:len(want)+1]
	if _, err := strs.ReadAt(b, int64(off)); err != nil || b[len(want)] != 0 || string(b[:len(want)]) != want {
		return Symbol{}, false
	}
	s.Name = want
	if versions != nil {
		var v [2]byte
		if _, err := versions.ReadAt(v[:], int64(2*i)); err != nil {
			return Symbol{}, false
		}
		s.Hidden = bo.Uint16(v[:])&0x8000 != 0
	}
	return s, s.Func() && !s.Hidden
}

// gnuHash is the GNU hash of a symbol name (h = h*33 + c from 5381).
func gnuHash(name string) uint32 {
	h := uint32(5381)
	for i := 0; i < len(name); i++ {
		h = h*33 + uint32(name[i])
	}
	return h
}
