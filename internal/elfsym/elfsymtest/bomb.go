// Package elfsymtest writes hostile ELF objects for tests: symbol-table
// bombs, whose entries all name one huge string.
package elfsymtest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

var le = binary.LittleEndian

// Bomb is a small 64-bit little-endian shared object whose .symtab has
// entries functions in its .text, every one named by the same string of
// nameSize bytes: 1,500 entries and 1 MiB make a 1.1 MB file that
// debug/elf expands to 1.5 GB of names.
func Bomb(entries, nameSize int) []byte {
	var b bytes.Buffer
	b.Write(make([]byte, 64)) // the ELF header, written last
	text := bytes.Repeat([]byte{0xc3}, 64)
	textOff := b.Len()
	b.Write(text)
	strOff, strtab := b.Len(), bombStrings(nameSize)
	b.Write(strtab)
	symOff, symtab := b.Len(), bombSymbols(entries, 1, 0x1000, uint64(len(text)))
	b.Write(symtab)
	shstr := []byte("\x00.text\x00.strtab\x00.symtab\x00.shstrtab\x00")
	shstrOff := b.Len()
	b.Write(shstr)
	for b.Len()%8 != 0 {
		b.WriteByte(0)
	}
	shoff := b.Len()
	headers := []section{
		{},
		{name: 1, typ: elf.SHT_PROGBITS, flags: uint64(elf.SHF_ALLOC | elf.SHF_EXECINSTR), addr: 0x1000, off: textOff, size: len(text), align: 16},
		{name: 7, typ: elf.SHT_STRTAB, off: strOff, size: len(strtab), align: 1},
		{name: 15, typ: elf.SHT_SYMTAB, off: symOff, size: len(symtab), link: 2, info: 1, align: 8, entsize: 24},
		{name: 23, typ: elf.SHT_STRTAB, off: shstrOff, size: len(shstr), align: 1},
	}
	for _, h := range headers {
		b.Write(h.bytes())
	}
	out := b.Bytes()
	copy(out, elfHeader(elf.ET_DYN, uint64(shoff), len(headers), 4))
	return out
}

// Patch returns the 64-bit little-endian object lib (a real library, such
// as a copy of libc.so.6) with a bomb .symtab and .strtab added: entries
// functions at the start of its .text, all named by one string of nameSize
// bytes. The loadable part is unchanged: the library still loads and runs.
func Patch(lib []byte, entries, nameSize int) ([]byte, error) {
	ef, err := elf.NewFile(bytes.NewReader(lib))
	if err != nil {
		return nil, err
	}
	if ef.Class != elf.ELFCLASS64 || ef.ByteOrder != binary.ByteOrder(le) {
		return nil, errors.New("only a 64-bit little-endian object is patched")
	}
	text := ef.Section(".text")
	if text == nil {
		return nil, errors.New("no .text")
	}
	textIdx := 0
	for i, s := range ef.Sections {
		if s == text {
			textIdx = i
		}
	}
	shoff := le.Uint64(lib[0x28:])
	shnum := int(le.Uint16(lib[0x3c:]))
	shstrndx := int(le.Uint16(lib[0x3e:]))
	if shoff == 0 || shnum == 0 || shoff+uint64(shnum)*64 > uint64(len(lib)) {
		return nil, fmt.Errorf("section headers at %d (%d) outside the file", shoff, shnum)
	}
	old := ef.Sections[shstrndx]
	oldNames, err := old.Data()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(lib)
	for b.Len()%8 != 0 {
		b.WriteByte(0)
	}
	strOff, strtab := b.Len(), bombStrings(nameSize)
	b.Write(strtab)
	for b.Len()%8 != 0 {
		b.WriteByte(0)
	}
	symOff, symtab := b.Len(), bombSymbols(entries, uint16(textIdx), text.Addr, min(text.Size, 4096))
	b.Write(symtab)
	names := append(append([]byte{}, oldNames...), ".symtab\x00.strtab\x00"...)
	symName, strName := len(oldNames), len(oldNames)+len(".symtab\x00")
	namesOff := b.Len()
	b.Write(names)
	for b.Len()%8 != 0 {
		b.WriteByte(0)
	}
	newShoff := b.Len()
	hdrs := append([]byte{}, lib[shoff:shoff+uint64(shnum)*64]...)
	// The section names now live in the larger table written above.
	h := hdrs[shstrndx*64:]
	le.PutUint64(h[0x18:], uint64(namesOff))
	le.PutUint64(h[0x20:], uint64(len(names)))
	b.Write(hdrs)
	b.Write(section{name: symName, typ: elf.SHT_SYMTAB, off: symOff, size: len(symtab), link: uint32(shnum + 1), info: 1, align: 8, entsize: 24}.bytes())
	b.Write(section{name: strName, typ: elf.SHT_STRTAB, off: strOff, size: len(strtab), align: 1}.bytes())
	out := b.Bytes()
	le.PutUint64(out[0x28:], uint64(newShoff))
	le.PutUint16(out[0x3c:], uint16(shnum+2))
	return out, nil
}

// bombStrings is a string table holding one name of n bytes at offset 1.
func bombStrings(n int) []byte {
	b := make([]byte, n+2)
	for i := 1; i <= n; i++ {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// bombSymbols is a .symtab: the null entry, then entries global functions
// named by offset 1, spread over span bytes from addr in section shndx.
func bombSymbols(entries int, shndx uint16, addr, span uint64) []byte {
	b := make([]byte, 24*(entries+1))
	for i := 1; i <= entries; i++ {
		e := b[24*i:]
		le.PutUint32(e, 1)
		e[4] = byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_FUNC)
		le.PutUint16(e[6:], shndx)
		le.PutUint64(e[8:], addr+uint64(i)%max(span, 1))
		le.PutUint64(e[16:], 1)
	}
	return b
}

type section struct {
	name           int
	typ            elf.SectionType
	flags, addr    uint64
	off, size      int
	link, info     uint32
	align, entsize uint64
}

func (s section) bytes() []byte {
	b := make([]byte, 64)
	le.PutUint32(b, uint32(s.name))
	le.PutUint32(b[4:], uint32(s.typ))
	le.PutUint64(b[8:], s.flags)
	le.PutUint64(b[16:], s.addr)
	le.PutUint64(b[24:], uint64(s.off))
	le.PutUint64(b[32:], uint64(s.size))
	le.PutUint32(b[40:], s.link)
	le.PutUint32(b[44:], s.info)
	le.PutUint64(b[48:], s.align)
	le.PutUint64(b[56:], s.entsize)
	return b
}

func elfHeader(typ elf.Type, shoff uint64, shnum, shstrndx int) []byte {
	b := make([]byte, 64)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	le.PutUint16(b[16:], uint16(typ))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(b[40:], shoff)
	le.PutUint16(b[52:], 64) // header size
	le.PutUint16(b[58:], 64) // section header size
	le.PutUint16(b[60:], uint16(shnum))
	le.PutUint16(b[62:], uint16(shstrndx))
	return b
}

// PatchDynamic returns the 64-bit little-endian object lib with its
// .dynsym, .dynstr and .gnu.version section headers pointing at larger
// copies of them: the original entries, then entries functions all named
// by one string of nameSize bytes. The dynamic linker reads the tables
// through the dynamic segment, which is unchanged (the library still loads
// and binds as before); what reads the section headers sees the bomb.
func PatchDynamic(lib []byte, entries, nameSize int) ([]byte, error) {
	ef, err := elf.NewFile(bytes.NewReader(lib))
	if err != nil {
		return nil, err
	}
	if ef.Class != elf.ELFCLASS64 || ef.ByteOrder != binary.ByteOrder(le) {
		return nil, errors.New("only a 64-bit little-endian object is patched")
	}
	idx := map[string]int{}
	for i, s := range ef.Sections {
		idx[s.Name] = i
	}
	ds, ok1 := idx[".dynsym"]
	dstr, ok2 := idx[".dynstr"]
	text, ok3 := idx[".text"]
	if !ok1 || !ok2 || !ok3 {
		return nil, errors.New("no .dynsym, .dynstr or .text")
	}
	data := func(i int) []byte {
		b, _ := ef.Sections[i].Data()
		return b
	}
	oldStr, oldSym := data(dstr), data(ds)
	strtab := append(append([]byte{}, oldStr...), bombStrings(nameSize)...)
	syms := bombSymbols(entries, uint16(text), ef.Sections[text].Addr, min(ef.Sections[text].Size, 4096))[24:]
	for i := 0; i < entries; i++ {
		le.PutUint32(syms[24*i:], uint32(len(oldStr)+1))
	}
	symtab := append(append([]byte{}, oldSym...), syms...)
	shoff := le.Uint64(lib[0x28:])
	shnum := int(le.Uint16(lib[0x3c:]))
	if shoff == 0 || shoff+uint64(shnum)*64 > uint64(len(lib)) {
		return nil, fmt.Errorf("section headers at %d (%d) outside the file", shoff, shnum)
	}
	hdrs := append([]byte{}, lib[shoff:shoff+uint64(shnum)*64]...)
	var b bytes.Buffer
	b.Write(lib)
	put := func(i int, content []byte) {
		for b.Len()%8 != 0 {
			b.WriteByte(0)
		}
		h := hdrs[i*64:]
		le.PutUint64(h[0x18:], uint64(b.Len()))
		le.PutUint64(h[0x20:], uint64(len(content)))
		b.Write(content)
	}
	put(dstr, strtab)
	put(ds, symtab)
	if vs, ok := idx[".gnu.version"]; ok {
		versions := append([]byte{}, data(vs)...)
		for i := 0; i < entries; i++ {
			versions = le.AppendUint16(versions, 1) // global, default
		}
		put(vs, versions)
	}
	for b.Len()%8 != 0 {
		b.WriteByte(0)
	}
	newShoff := b.Len()
	b.Write(hdrs)
	out := b.Bytes()
	le.PutUint64(out[0x28:], uint64(newShoff))
	return out, nil
}
