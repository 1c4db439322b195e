package heapprof

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/safeio"
)

// Source lines come from the DWARF line tables of the mapped file, or of
// its separate debug file (found by build ID under debugRoot/.build-id, or
// by .gnu_debuglink next to the file, in its .debug directory and under
// debugRoot). The cost is bounded: the debug sections are read on the
// first address looked up in a file, the units are then found by address
// one at a time (SeekPC reads only each unit's own entry and ranges), and a
// unit's line table is decoded once, when an address falls in it. Files
// are cached by build ID: the same library mapped by two processes, or
// under two names, is read once per Symbolizer.

// debugRoot is where distributions install separate debug files.
var debugRoot = "/usr/lib/debug"

// lineInfo is the DWARF of one file, decoded lazily.
type lineInfo struct {
	data   *dwarf.Data
	ranges []unitRange                 // the units' address ranges, read on first use
	units  map[dwarf.Offset]*unitLines // by the unit's offset; nil: no line table
}

// unitRange is one address range of a compile unit.
type unitRange struct {
	lo, hi uint64
	unit   *dwarf.Entry
}

// unitLines is one unit's line table: rows by address, each the start of
// a range that ends at the next row (or at an end of sequence).
type unitLines struct {
	rows []lineRow
}

type lineRow struct {
	addr uint64
	file string
	line int
	end  bool // the end of a sequence: no line from here
}

// readBuildID returns the GNU build ID of ef as hex, "" when it has none.
func readBuildID(ef *elf.File) string {
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		b, err := s.Data()
		if err != nil {
			continue
		}
		if id := noteBuildID(b, ef.ByteOrder); id != "" {
			return id
		}
	}
	return ""
}

// noteBuildID finds the NT_GNU_BUILD_ID note in a note section's bytes.
func noteBuildID(b []byte, bo binary.ByteOrder) string {
	align := func(n uint32) int { return int((n + 3) &^ 3) }
	for len(b) >= 12 {
		namesz, descsz, typ := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
		b = b[12:]
		if uint64(align(namesz))+uint64(align(descsz)) > uint64(len(b)) {
			return ""
		}
		name, desc := b[:namesz], b[align(namesz):align(namesz)+int(descsz)]
		b = b[align(namesz)+align(descsz):]
		if typ == 3 && string(bytes.TrimRight(name, "\x00")) == "GNU" && len(desc) > 0 {
			return hex.EncodeToString(desc)
		}
	}
	return ""
}

// hasDWARF says whether ef carries line tables itself.
func hasDWARF(ef *elf.File) bool {
	return ef.Section(".debug_line") != nil || ef.Section(".zdebug_line") != nil
}

// debugLink returns the file named by ef's .gnu_debuglink and the CRC-32
// of its contents that the link records; "" when none.
func debugLink(ef *elf.File) (string, uint32) {
	s := ef.Section(".gnu_debuglink")
	if s == nil {
		return "", 0
	}
	b, err := s.Data()
	if err != nil {
		return "", 0
	}
	name, _, _ := bytes.Cut(b, []byte{0})
	if len(name) == 0 || bytes.ContainsRune(name, '/') {
		return "", 0
	}
	off := (len(name) + 1 + 3) &^ 3 // the CRC follows the name, 4-byte aligned
	if off+4 > len(b) {
		return "", 0
	}
	return string(name), ef.ByteOrder.Uint32(b[off:])
}

// debugFileCandidates lists where the separate debug file of the file at
// path (as the target sees it) may be, most specific first.
func debugFileCandidates(path, buildID, link string) []string {
	var out []string
	if len(buildID) > 2 {
		out = append(out, filepath.Join(debugRoot, ".build-id", buildID[:2], buildID[2:]+".debug"))
	}
	if link != "" {
		dir := filepath.Dir(path)
		out = append(out, filepath.Join(dir, link), filepath.Join(dir, ".debug", link), filepath.Join(debugRoot, dir, link))
	}
	return out
}

// openDebugFile opens the first candidate that is a regular ELF file with
// line tables and the same build ID, or, for a file without one, the
// contents whose CRC-32 the debug link recorded.
func openDebugFile(cands []string, buildID string, crc uint32) (*dwarf.Data, error) {
	for _, c := range cands {
		d, err := readDebugFile(c, buildID, crc)
		if err == nil {
			return d, nil
		}
	}
	return nil, errors.New("no DWARF line tables")
}

func readDebugFile(name, buildID string, crc uint32) (d *dwarf.Data, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("%s: malformed debug file: %v", name, r)
		}
	}()
	// The name comes from the target's .gnu_debuglink: never block on
	// what is there (a FIFO), read only a regular file of sane size.
	f, _, err := safeio.OpenFile(name, maxObject)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	if buildID == "" {
		h := crc32.NewIEEE()
		if _, err := io.Copy(h, f); err != nil {
			return nil, err
		}
		if h.Sum32() != crc {
			return nil, fmt.Errorf("%s: another build (CRC)", name)
		}
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, err
	}
	if buildID != "" && readBuildID(ef) != buildID {
		return nil, fmt.Errorf("%s: another build", name)
	}
	if !hasDWARF(ef) {
		return nil, fmt.Errorf("%s: no line tables", name)
	}
	return loadDWARF(ef)
}

// loadDWARF reads the sections line lookups need, and not the others (the
// location lists, types, frame tables, names: in a distribution's libc debug
// file, a quarter of the time to decompress). Files with the old .zdebug
// sections are read by debug/elf whole.
func loadDWARF(ef *elf.File) (*dwarf.Data, error) {
	if ef.Section(".zdebug_info") != nil {
		return ef.DWARF()
	}
	get := func(name string) ([]byte, error) {
		s := ef.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			return nil, nil
		}
		return s.Data()
	}
	var sec [5][]byte
	for i, name := range []string{".debug_abbrev", ".debug_info", ".debug_line", ".debug_ranges", ".debug_str"} {
		b, err := get(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		sec[i] = b
	}
	if sec[0] == nil || sec[1] == nil {
		return nil, errors.New("no .debug_info")
	}
	d, err := dwarf.New(sec[0], nil, nil, sec[1], sec[2], nil, sec[3], sec[4])
	if err != nil {
		return nil, err
	}
	// DWARF 5: the unit's strings, addresses and ranges may be here.
	for _, name := range []string{".debug_addr", ".debug_line_str", ".debug_str_offsets", ".debug_rnglists"} {
		b, err := get(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if b != nil {
			if err := d.AddSection(name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// line returns the source file and line of v, an address as the file was
// linked; "" and 0 when its DWARF does not say.
func (li *lineInfo) line(v uint64) (file string, line int) {
	if li == nil || li.data == nil {
		return "", 0
	}
	defer func() {
		// debug/dwarf on a hostile file: a table that panics names nothing.
		if r := recover(); r != nil {
			file, line = "", 0
		}
	}()
	if li.ranges == nil {
		li.ranges = unitRanges(li.data)
	}
	j := sort.Search(len(li.ranges), func(j int) bool { return li.ranges[j].hi > v })
	if j == len(li.ranges) || li.ranges[j].lo > v {
		return "", 0
	}
	cu := li.ranges[j].unit
	u, ok := li.units[cu.Offset]
	if !ok {
		u = decodeUnit(li.data, cu)
		li.units[cu.Offset] = u
	}
	if u == nil {
		return "", 0
	}
	i := sort.Search(len(u.rows), func(i int) bool { return u.rows[i].addr > v }) - 1
	if i < 0 || u.rows[i].end || u.rows[i].line == 0 {
		return "", 0
	}
	return u.rows[i].file, u.rows[i].line
}

// unitRanges reads the top entry of every compile unit (not the entries
// below it) and returns their address ranges by address.
func unitRanges(d *dwarf.Data) []unitRange {
	out := []unitRange{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			rs, err := d.Ranges(e)
			if err == nil {
				for _, x := range rs {
					if x[1] > x[0] {
						out = append(out, unitRange{lo: x[0], hi: x[1], unit: e})
					}
				}
			}
		}
		r.SkipChildren()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lo < out[j].lo })
	return out
}

// decodeUnit reads a unit's whole line table once, sorted by address.
func decodeUnit(d *dwarf.Data, cu *dwarf.Entry) *unitLines {
	lr, err := d.LineReader(cu)
	if err != nil || lr == nil {
		return nil
	}
	u := &unitLines{}
	var e dwarf.LineEntry
	for {
		if err := lr.Next(&e); err != nil {
			break
		}
		row := lineRow{addr: e.Address, line: e.Line, end: e.EndSequence}
		if e.File != nil {
			row.file = e.File.Name
		}
		u.rows = append(u.rows, row)
	}
	// Sequences may come in any order; within one, rows ascend. A stable
	// sort keeps an end of sequence after a row at the same address.
	sort.SliceStable(u.rows, func(i, j int) bool {
		if u.rows[i].addr != u.rows[j].addr {
			return u.rows[i].addr < u.rows[j].addr
		}
		return !u.rows[i].end && u.rows[j].end
	})
	// At one address a row that starts a range stands over an end of
	// sequence (sorted after it), and the last such row over the others.
	out := u.rows[:0]
	for _, r := range u.rows {
		if n := len(out); n > 0 && out[n-1].addr == r.addr {
			if !r.end || out[n-1].end {
				out[n-1] = r
			}
			continue
		}
		out = append(out, r)
	}
	u.rows = out
	return u
}

// shortFile trims the directories off a source path for display, and
// bounds it (the name comes from the target's files).
func shortFile(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if len(name) > maxName {
		name = strings.ToValidUTF8(name[:maxName], "") + "…"
	}
	return name
}
