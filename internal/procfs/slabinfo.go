package procfs

// /proc/slabinfo (mm/slab_common.c, slab_show; mode 0400, root only),
// format version 2.1 since 2.6.10 (both SLAB and SLUB print it):
//
//	slabinfo - version: 2.1
//	# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>
//	ext4_inode_cache    4242   4260   1192   27    8 : tunables    0    0    0 : slabdata    158    158      0
//
// Columns are mapped by the names in the "# name" header, so a kernel that
// adds columns (CONFIG_DEBUG_SLAB's " : globalstat ... : cpustat ...")
// parses, the extra columns landing in Slab.Extra. Under SLUB the tunables
// are 0 and active_objs == num_objs, active_slabs == num_slabs (SLUB does not
// track per-object use here). A cache name is everything before the numeric
// columns, so a name with a blank survives. Version 1.x had other columns
// and is rejected.

import "strings"

// Slabinfo reads proc/slabinfo (root only on most hosts).
func (f FS) Slabinfo() ([]Slab, error) {
	return parseFile(f, "proc/slabinfo", func(data []byte) ([]Slab, error) {
		return ParseSlabinfo(data)
	})
}

const slabinfoFile = "proc/slabinfo"

// The columns of version 2.1, used when the "# name" header is missing.
const slabinfoDefaultHeader = "# name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>"

// slabColumns is the column layout taken from the header line.
type slabColumns struct {
	names []string // every numeric column, in order
	field []int8   // slabField* per column, -1 when unnamed here
	lead  int      // columns before the first " : "
	vals  []int64  // scratch: one cache line's values
}

const (
	slabActiveObjs = iota
	slabNumObjs
	slabObjSize
	slabObjPerSlab
	slabPagesPerSlab
	slabLimit
	slabBatchCount
	slabSharedFactor
	slabActiveSlabs
	slabNumSlabs
	slabSharedAvail
)

func slabFieldOf(name string) int8 {
	switch name {
	case "active_objs":
		return slabActiveObjs
	case "num_objs":
		return slabNumObjs
	case "objsize":
		return slabObjSize
	case "objperslab":
		return slabObjPerSlab
	case "pagesperslab":
		return slabPagesPerSlab
	case "limit":
		return slabLimit
	case "batchcount":
		return slabBatchCount
	case "sharedfactor":
		return slabSharedFactor
	case "active_slabs":
		return slabActiveSlabs
	case "num_slabs":
		return slabNumSlabs
	case "sharedavail":
		return slabSharedAvail
	}
	return -1
}

// parseSlabHeader parses the "# name <a> <b> : label <c> ..." line.
func parseSlabHeader(t string, line int) (slabColumns, error) {
	var c slabColumns
	rest := strings.TrimPrefix(t, "#")
	f, rest := nextField(rest)
	if f != "name" {
		return c, perr(slabinfoFile, line, "header %s does not start with \"# name\"", quote(t))
	}
	c.lead = -1
	for {
		f, rest = nextField(rest)
		if f == "" {
			break
		}
		switch {
		case f == ":":
			if c.lead < 0 {
				c.lead = len(c.names)
			}
		case len(f) > 2 && f[0] == '<' && f[len(f)-1] == '>':
			name := f[1 : len(f)-1]
			c.names = append(c.names, name)
			c.field = append(c.field, slabFieldOf(name))
		default:
			// a section label: tunables, slabdata, globalstat, cpustat
		}
	}
	if c.lead < 0 {
		c.lead = len(c.names)
	}
	if c.lead == 0 {
		return c, perr(slabinfoFile, line, "header %s names no columns", quote(t))
	}
	c.vals = make([]int64, len(c.names))
	return c, nil
}

// ParseSlabinfo parses proc/slabinfo version 2.x.
func ParseSlabinfo(data []byte) ([]Slab, error) {
	s := string(data)
	first, s := nextLine(s)
	first = trimSpace(first)
	const prefix = "slabinfo - version:"
	if !strings.HasPrefix(first, prefix) {
		return nil, perr(slabinfoFile, 1, "first line %s is not \"slabinfo - version: 2.1\"", quote(first))
	}
	version := trimSpace(first[len(prefix):])
	if major, _, _ := strings.Cut(version, "."); major != "2" {
		return nil, perr(slabinfoFile, 1, "unsupported slabinfo version %s (want 2.x)", quote(version))
	}
	var cols slabColumns
	slabs := make([]Slab, 0, lineHint(s, 48))
	for n, t := range lines(s) {
		line := n + 1 // the version line was line 1
		t = trimSpace(t)
		if t[0] == '#' {
			c, err := parseSlabHeader(t, line)
			if err != nil {
				return nil, err
			}
			cols = c
			continue
		}
		if cols.names == nil {
			cols, _ = parseSlabHeader(slabinfoDefaultHeader, 0)
		}
		sl, err := parseSlabLine(t, &cols, line)
		if err != nil {
			return nil, err
		}
		slabs = append(slabs, sl)
	}
	return slabs, nil
}

func parseSlabLine(t string, cols *slabColumns, line int) (Slab, error) {
	vals := cols.vals
	head, tail := t, ""
	if i := strings.Index(t, " : "); i >= 0 {
		head, tail = t[:i], t[i:]
	}
	// The name is what is left of head after its last cols.lead fields.
	for i := cols.lead - 1; i >= 0; i-- {
		var f string
		head, f = lastField(head)
		v, ok := atou(f)
		if !ok {
			return Slab{}, perr(slabinfoFile, line, "cache line %s: bad column %s", quote(t), quote(f))
		}
		vals[i] = v
	}
	name := trimSpace(head)
	if name == "" {
		return Slab{}, perr(slabinfoFile, line, "cache line %s has no name", quote(t))
	}
	n := cols.lead
	afterColon := false
	for {
		f, rest := nextField(tail)
		tail = rest
		if f == "" {
			break
		}
		if f == ":" {
			afterColon = true
			continue
		}
		v, ok := atou(f)
		if !ok {
			if afterColon && f[0] >= 'a' && f[0] <= 'z' { // section label
				afterColon = false
				continue
			}
			return Slab{}, perr(slabinfoFile, line, "cache line %s: bad column %s", quote(t), quote(f))
		}
		afterColon = false
		if n >= len(cols.names) {
			return Slab{}, perr(slabinfoFile, line, "cache line %s has more than the %d columns of the header", quote(t), len(cols.names))
		}
		vals[n] = v
		n++
	}
	if n != len(cols.names) {
		return Slab{}, perr(slabinfoFile, line, "cache line %s has %d of the %d columns of the header", quote(t), n, len(cols.names))
	}
	sl := Slab{Name: name}
	for i, fi := range cols.field {
		v := vals[i]
		switch fi {
		case slabActiveObjs:
			sl.ActiveObjs = v
		case slabNumObjs:
			sl.NumObjs = v
		case slabObjSize:
			sl.ObjSize = v
		case slabObjPerSlab:
			sl.ObjPerSlab = v
		case slabPagesPerSlab:
			sl.PagesPerSlab = v
		case slabLimit:
			sl.Limit = v
		case slabBatchCount:
			sl.BatchCount = v
		case slabSharedFactor:
			sl.SharedFactor = v
		case slabActiveSlabs:
			sl.ActiveSlabs = v
		case slabNumSlabs:
			sl.NumSlabs = v
		case slabSharedAvail:
			sl.SharedAvail = v
		default:
			if sl.Extra == nil {
				sl.Extra = make(map[string]int64)
			}
			sl.Extra[cols.names[i]] = v
		}
	}
	return sl, nil
}
