package runtimes

// The HotSpot JVM's performance-data file (hsperfdata), read without
// attaching to the JVM: by default every JVM (-XX:+UsePerfData, on unless
// disabled) maps /tmp/hsperfdata_<user>/<pid> shared and updates its
// counters in place, which is what jstat reads. A JVM in another mount
// namespace keeps it under its own /tmp (reach it through
// /proc/<pid>/root), named by its pid in its own pid namespace (the last
// field of NSpid in /proc/<pid>/status).
//
// Layout (HotSpot perfMemory.hpp, format version 2):
//
//	prologue (32 bytes)
//	  0  magic          u32  0xcafec0c0, always big-endian
//	  4  byte_order     u8   0 big-endian, 1 little-endian (for what follows)
//	  5  major_version  u8   2
//	  6  minor_version  u8
//	  7  accessible     u8   1 once the JVM finished initialising the file
//	  8  used           i32  bytes of the region in use
//	 12  overflow       i32
//	 16  mod_time_stamp i64
//	 24  entry_offset   i32  offset of the first entry
//	 28  num_entries    i32
//	entry (repeated num_entries times, each entry_length bytes)
//	  0  entry_length   i32
//	  4  name_offset    i32  from the entry start; NUL-terminated name
//	  8  vector_length  i32  0 for a scalar
//	 12  data_type      u8   'J' (int64) or 'B' (byte vector: strings)
//	 13  flags          u8
//	 14  data_units     u8   1 none, 2 bytes, 3 ticks, 4 events, 5 string, 6 hertz
//	 15  variability    u8   1 constant, 2 monotonic, 3 variable
//	 16  data_offset    i32  from the entry start
//
// Times are in ticks of sun.os.hrt.frequency per second. The file is
// updated while it is read: a torn value is possible but harmless for
// counters read twice.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// HsperfMagic starts every hsperfdata file.
const HsperfMagic = 0xcafec0c0

const (
	prologueSize = 32
	entryHeader  = 20
	maxEntries   = 1 << 16
)

// Units of a perf-data counter.
const (
	UnitNone   = 1
	UnitBytes  = 2
	UnitTicks  = 3
	UnitEvents = 4
	UnitString = 5
	UnitHertz  = 6
)

// PerfEntry is one named counter or string of a perf-data file.
type PerfEntry struct {
	Name        string
	Units       uint8
	Variability uint8
	// Int is the value of a 'J' scalar.
	Int int64
	// Str is the value of a string ('B' vector with string units).
	Str    string
	IsText bool
}

// PerfData is a parsed hsperfdata file.
type PerfData struct {
	Major, Minor int
	Accessible   bool
	Entries      map[string]PerfEntry
}

// ErrNotHsperf is wrapped when a file is not a JVM perf-data file.
var ErrNotHsperf = errors.New("not a JVM hsperfdata file")

// Int returns a numeric counter.
func (p *PerfData) Int(name string) (int64, bool) {
	e, ok := p.Entries[name]
	if !ok || e.IsText {
		return 0, false
	}
	return e.Int, true
}

// Str returns a string entry.
func (p *PerfData) Str(name string) string {
	e, ok := p.Entries[name]
	if !ok || !e.IsText {
		return ""
	}
	return e.Str
}

// ParseHsperf parses a perf-data file. Bad input is an error naming the
// offset, never a panic.
func ParseHsperf(b []byte) (*PerfData, error) {
	if len(b) < prologueSize {
		return nil, fmt.Errorf("%w: %d bytes, want at least %d", ErrNotHsperf, len(b), prologueSize)
	}
	if m := binary.BigEndian.Uint32(b); m != HsperfMagic {
		return nil, fmt.Errorf("%w: magic %#x, want %#x", ErrNotHsperf, m, uint32(HsperfMagic))
	}
	var bo binary.ByteOrder
	switch b[4] {
	case 0:
		bo = binary.BigEndian
	case 1:
		bo = binary.LittleEndian
	default:
		return nil, fmt.Errorf("%w: byte order %d", ErrNotHsperf, b[4])
	}
	p := &PerfData{Major: int(b[5]), Minor: int(b[6]), Accessible: b[7] != 0, Entries: map[string]PerfEntry{}}
	if p.Major != 2 {
		return nil, fmt.Errorf("hsperfdata format version %d.%d: only version 2 is known", p.Major, p.Minor)
	}
	used := int64(int32(bo.Uint32(b[8:])))
	off := int64(int32(bo.Uint32(b[24:])))
	n := int64(int32(bo.Uint32(b[28:])))
	if used > int64(len(b)) || used < prologueSize {
		used = int64(len(b))
	}
	if n < 0 || n > maxEntries {
		return nil, fmt.Errorf("hsperfdata: %d entries: corrupt prologue", n)
	}
	for i := int64(0); i < n; i++ {
		if off < prologueSize || off+entryHeader > used {
			return nil, fmt.Errorf("hsperfdata: entry %d at offset %d lies outside the %d bytes in use (truncated file?)", i, off, used)
		}
		e := b[off:used]
		elen := int64(int32(bo.Uint32(e[0:])))
		nameOff := int64(int32(bo.Uint32(e[4:])))
		vlen := int64(int32(bo.Uint32(e[8:])))
		typ, units, vari := e[12], e[14], e[15]
		dataOff := int64(int32(bo.Uint32(e[16:])))
		if elen == 0 && nameOff == 0 && vlen == 0 && dataOff == 0 && typ == 0 {
			// Counted but not written yet: the JVM counts an entry and
			// moves the bytes in use when it allocates the entry's room,
			// then fills it in, so a read while a young JVM adds counters
			// ends on one or more zeroed entries. What precedes is whole.
			break
		}
		if elen < entryHeader || elen > int64(len(e)) || nameOff < entryHeader || nameOff >= elen ||
			dataOff < entryHeader || dataOff > elen || vlen < 0 {
			return nil, fmt.Errorf("hsperfdata: entry %d at offset %d: bad lengths (entry %d, name at %d, data at %d)", i, off, elen, nameOff, dataOff)
		}
		rec := e[:elen]
		name := rec[nameOff:]
		if j := bytes.IndexByte(name, 0); j >= 0 {
			name = name[:j]
		}
		pe := PerfEntry{Name: string(name), Units: units, Variability: vari}
		data := rec[dataOff:]
		switch {
		case typ == 'J' && vlen == 0:
			if len(data) < 8 {
				return nil, fmt.Errorf("hsperfdata: entry %s: truncated value", pe.Name)
			}
			pe.Int = int64(bo.Uint64(data))
		case typ == 'B' && vlen > 0:
			if vlen < int64(len(data)) {
				data = data[:vlen]
			}
			if j := bytes.IndexByte(data, 0); j >= 0 {
				data = data[:j]
			}
			pe.Str, pe.IsText = string(data), true
		default:
			off += elen
			continue // vectors of other types: not used here
		}
		p.Entries[pe.Name] = pe
		off += elen
	}
	return p, nil
}
