package procfs

// /proc/PID/maps (fs/proc/task_mmu.c, show_map_vma), 2.6+:
//
//	address                   perms offset   dev   inode                      pathname
//	559aede6b000-559aede9a000 r--p 00000000 fe:00 246999                     /usr/bin/bash
//	559b285ec000-559b28896000 rw-p 00000000 00:00 0                          [heap]
//	7ff84aabd000-7ff84ab14000 rw-p 00000000 00:00 0
//	7f0000000000-7f0000021000 rw-s 00000000 00:01 1234                       /memfd:x (deleted)
//	ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
//
// Addresses and offset are hex, dev is hex "major:minor", inode decimal.
// The path is padded to a column with blanks and runs to the end of the
// line: it may contain blanks, ends in " (deleted)" when the file was
// unlinked, and is empty for anonymous memory (glibc arenas and large
// malloc chunks are anonymous). Newlines in a file name are printed as
// "\012". Reading maps takes the target's mmap lock, but only walks VMAs,
// not page tables.

import "strings"

// ProcMaps reads proc/PID/maps.
func (f FS) ProcMaps(pid int) ([]Mapping, error) {
	name := procFile(pid, "maps")
	return parseFile(f, name, func(data []byte) ([]Mapping, error) {
		return ParseMaps(data, name)
	})
}

// SelfMaps reads proc/self/maps, the calling process' own mappings.
func (f FS) SelfMaps() ([]Mapping, error) {
	const name = "proc/self/maps"
	return parseFile(f, name, func(data []byte) ([]Mapping, error) {
		return ParseMaps(data, name)
	})
}

// ParseMaps parses proc/PID/maps.
func ParseMaps(data []byte, file string) ([]Mapping, error) {
	s := string(data)
	out := make([]Mapping, 0, lineHint(s, 32))
	for line, t := range lines(s) {
		m, ok := parseMapping(t)
		if !ok {
			return nil, perr(file, line, "bad mapping %s", quote(t))
		}
		out = append(out, m)
	}
	return out, nil
}

func parseMapping(t string) (Mapping, bool) {
	var m Mapping
	addr, rest := nextField(t)
	perms, rest := nextField(rest)
	off, rest := nextField(rest)
	dev, rest := nextField(rest)
	ino, rest := nextField(rest)
	lo, hi, ok := strings.Cut(addr, "-")
	if !ok {
		return m, false
	}
	var ok1, ok2, ok3, ok4 bool
	m.Start, ok1 = hextou64(lo)
	m.End, ok2 = hextou64(hi)
	m.Offset, ok3 = hextou64(off)
	m.Inode, ok4 = atou64(ino)
	if !ok1 || !ok2 || !ok3 || !ok4 || m.Start > m.End || len(perms) != 4 {
		return Mapping{}, false
	}
	maj, mnr, ok := strings.Cut(dev, ":")
	if _, ok1 := hextou64(maj); !ok || !ok1 {
		return Mapping{}, false
	}
	if _, ok2 := hextou64(mnr); !ok2 {
		return Mapping{}, false
	}
	m.Perms = perms
	m.Dev = dev
	m.Path = trimLeft(rest) // keep trailing blanks: they belong to the name
	return m, true
}
