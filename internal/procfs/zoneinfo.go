package procfs

// /proc/zoneinfo (mm/vmstat.c, zoneinfo_show_print), 2.6.13+. Kernel 6.18:
//
//	Node 0, zone      DMA
//	  per-node stats                         4.8+, first populated zone of a node only
//	      nr_inactive_anon 1842
//	      ...
//	  pages free     3840
//	        boost    0                       5.0+
//	        min      44                      watermarks include the boost
//	        low      55
//	        high     66
//	        promo    77                      ≈6.0+
//	        spanned  4095
//	        present  3998
//	        managed  3840                    3.8+
//	        cma      0                       newer kernels
//	        protection: (0, 3019, 5707, 5707, 5707)
//	      nr_free_pages 3840                 zone counters, vmstat names
//	      ...
//	      numa_hit     0
//	  pagesets
//	    cpu: 0
//	              count:    0
//	              high:     0
//	              batch:    1
//	              high_min: 27               ≈6.7+
//	              high_max: 240              ≈6.7+
//	  vm stats threshold: 4                  SMP; belongs to the cpu block above
//	    cpu: 1
//	    ...
//	  node_unreclaimable:  0
//	  start_pfn:           1
//	Node 0, zone    DMA32
//	...
//
// Every zone of every online node is printed; an unpopulated one stops after
// "protection:". Older kernels add or lack lines (scanned, all_unreclaimable:,
// prev_priority:, inactive_ratio:, reserved_highatomic:), so lines are
// recognised by key, never by position, and every key is kept: unknown
// "key value" and "key: value" lines of a zone go to Zone.Stats, unknown
// lines inside a cpu block (indented deeper than "cpu:") to PageSet.Extra.

import "strings"

// Zoneinfo reads proc/zoneinfo.
func (f FS) Zoneinfo() ([]Zone, error) {
	return parseFile(f, "proc/zoneinfo", func(data []byte) ([]Zone, error) {
		return ParseZoneinfo(data)
	})
}

const zoneinfoFile = "proc/zoneinfo"

// Where in a zone section the parser is.
const (
	zsHeader   = iota // after "Node N, zone NAME"
	zsNode            // inside "per-node stats"
	zsZone            // after "pages free"
	zsPagesets        // after "pagesets"
)

// Required lines of a zone, as bits.
const (
	zFree = 1 << iota
	zMin
	zLow
	zHigh
	zSpanned
	zPresent
	zManaged
	zProtection
	zAll = zFree | zMin | zLow | zHigh | zSpanned | zPresent | zManaged | zProtection
)

// Required lines of a cpu block.
const (
	pCount = 1 << iota
	pHigh
	pBatch
	pAll = pCount | pHigh | pBatch
)

type zoneinfoParser struct {
	zones     []Zone
	zone      *Zone
	zoneLine  int
	seen      int
	state     int
	ps        *PageSet
	psLine    int
	psSeen    int
	cpuIndent int
	statsHint int
}

// ParseZoneinfo parses proc/zoneinfo. Zones come in file order. A zone
// without one of "pages free", min, low, high, spanned, present, managed and
// protection (a truncated file, or a kernel before 3.8) is an error naming
// the zone's "Node" line.
func ParseZoneinfo(data []byte) ([]Zone, error) {
	s := string(data)
	p := zoneinfoParser{statsHint: 32}
	p.zones = make([]Zone, 0, min(strings.Count(s, "Node "), len(s)/128+1))
	line := 0
	for len(s) > 0 {
		var raw string
		raw, s = nextLine(s)
		line++
		t := trimLeft(raw)
		indent := len(raw) - len(t)
		t = trimRight(t)
		if t == "" {
			continue
		}
		if err := p.line(t, indent, line); err != nil {
			return nil, err
		}
	}
	if err := p.endZone(); err != nil {
		return nil, err
	}
	if len(p.zones) == 0 {
		return nil, perr(zoneinfoFile, 0, "no zones")
	}
	return p.zones, nil
}

func (p *zoneinfoParser) line(t string, indent, line int) error {
	if strings.HasPrefix(t, "Node ") {
		if err := p.endZone(); err != nil {
			return err
		}
		return p.startZone(t, line)
	}
	z := p.zone
	if z == nil {
		return perr(zoneinfoFile, line, "%s before the first \"Node\" line", quote(t))
	}
	switch {
	case t == "per-node stats":
		p.state = zsNode
		return nil
	case t == "pagesets":
		p.state = zsPagesets
		return nil
	case strings.HasPrefix(t, "pages free"):
		v, ok := atou(trimSpace(t[len("pages free"):]))
		if !ok {
			return perr(zoneinfoFile, line, "bad %s", quote(t))
		}
		z.Free = v
		p.seen |= zFree
		p.state = zsZone
		return nil
	case strings.HasPrefix(t, "protection:"):
		prot, ok := parseProtection(t[len("protection:"):])
		if !ok {
			return perr(zoneinfoFile, line, "bad %s", quote(t))
		}
		z.Protection = prot
		p.seen |= zProtection
		return nil
	case strings.HasPrefix(t, "vm stats threshold:"):
		if p.ps == nil {
			return perr(zoneinfoFile, line, "\"vm stats threshold\" outside a cpu block")
		}
		v, ok := atoi(trimSpace(t[len("vm stats threshold:"):]))
		if !ok {
			return perr(zoneinfoFile, line, "bad %s", quote(t))
		}
		p.ps.VMStatsThreshold = v
		return nil
	case p.state == zsPagesets && strings.HasPrefix(t, "cpu:"):
		return p.startPageset(t, indent, line)
	}

	key, val, err := splitKey(t)
	if err != nil {
		return perr(zoneinfoFile, line, "%v", err)
	}
	colon := len(key) < len(t) && t[len(key)] == ':'
	v, ok := atoi(val)
	if !ok {
		return perr(zoneinfoFile, line, "value %s of %s is not an integer", quote(val), quote(key))
	}
	if p.state == zsNode {
		kvPut(&z.NodeStats, key, v, 64)
		return nil
	}
	if !colon {
		bit := 0
		var dst *int64
		switch key {
		case "boost":
			dst = &z.Boost
		case "min":
			dst, bit = &z.Min, zMin
		case "low":
			dst, bit = &z.Low, zLow
		case "high":
			dst, bit = &z.High, zHigh
		case "promo":
			dst = &z.Promo
		case "spanned":
			dst, bit = &z.Spanned, zSpanned
		case "present":
			dst, bit = &z.Present, zPresent
		case "managed":
			dst, bit = &z.Managed, zManaged
		case "cma":
			dst = &z.CMA
		}
		if dst != nil {
			if v < 0 {
				return perr(zoneinfoFile, line, "negative %s", quote(t))
			}
			*dst = v
			p.seen |= bit
			return nil
		}
	}
	if p.state == zsPagesets && colon && p.ps != nil {
		switch key {
		case "count":
			p.ps.Count = v
			p.psSeen |= pCount
			return nil
		case "high":
			p.ps.High = v
			p.psSeen |= pHigh
			return nil
		case "batch":
			p.ps.Batch = v
			p.psSeen |= pBatch
			return nil
		case "high_min":
			p.ps.HighMin = v
			return nil
		case "high_max":
			p.ps.HighMax = v
			return nil
		}
		if indent > p.cpuIndent {
			kvPut(&p.ps.Extra, key, v, 2)
			return nil
		}
	}
	kvPut(&z.Stats, key, v, p.statsHint)
	return nil
}

// startZone parses "Node 0, zone      DMA".
func (p *zoneinfoParser) startZone(t string, line int) error {
	node, rest := nextField(t[len("Node "):])
	word, rest := nextField(rest)
	name, rest := nextField(rest)
	n, ok := atou(strings.TrimSuffix(node, ","))
	if !ok || !strings.HasSuffix(node, ",") || word != "zone" || name == "" || trimSpace(rest) != "" || n > 1<<30 {
		return perr(zoneinfoFile, line, "bad zone header %s", quote(t))
	}
	p.zones = append(p.zones, Zone{Node: int(n), Name: name, Boost: -1, Promo: -1, CMA: -1})
	p.zone = &p.zones[len(p.zones)-1]
	p.zoneLine = line
	p.seen = 0
	p.state = zsHeader
	p.ps = nil
	return nil
}

// endZone checks the zone being parsed, if any, is complete.
func (p *zoneinfoParser) endZone() error {
	z := p.zone
	if z == nil {
		return nil
	}
	if err := p.endPageset(); err != nil {
		return err
	}
	if missing := zAll &^ p.seen; missing != 0 {
		name := "?"
		for _, m := range []struct {
			bit  int
			name string
		}{{zFree, "pages free"}, {zMin, "min"}, {zLow, "low"}, {zHigh, "high"}, {zSpanned, "spanned"},
			{zPresent, "present"}, {zManaged, "managed"}, {zProtection, "protection"}} {
			if missing&m.bit != 0 {
				name = m.name
				break
			}
		}
		return perr(zoneinfoFile, p.zoneLine, "node %d zone %s has no %q line", z.Node, z.Name, name)
	}
	if n := len(z.Stats.Keys); n > p.statsHint {
		p.statsHint = n
	}
	p.zone = nil
	return nil
}

// startPageset parses "cpu: 0" (old kernels: "cpu: 0 pcp: 0").
func (p *zoneinfoParser) startPageset(t string, indent, line int) error {
	if err := p.endPageset(); err != nil {
		return err
	}
	id, rest := nextField(t[len("cpu:"):])
	cpu, ok := atou(id)
	if !ok || cpu > 1<<30 {
		return perr(zoneinfoFile, line, "bad %s", quote(t))
	}
	ps := PageSet{CPU: int(cpu), HighMin: -1, HighMax: -1, VMStatsThreshold: -1}
	for rest = trimSpace(rest); rest != ""; rest = trimSpace(rest) {
		var k, v string
		k, rest = nextField(rest)
		v, rest = nextField(rest)
		n, ok := atoi(v)
		if len(k) < 2 || !strings.HasSuffix(k, ":") || !ok {
			return perr(zoneinfoFile, line, "bad %s", quote(t))
		}
		kvPut(&ps.Extra, k[:len(k)-1], n, 2)
	}
	z := p.zone
	if z.PageSets == nil {
		z.PageSets = make([]PageSet, 0, 8)
	}
	z.PageSets = append(z.PageSets, ps)
	p.ps = &z.PageSets[len(z.PageSets)-1]
	p.psLine = line
	p.psSeen = 0
	p.cpuIndent = indent
	return nil
}

func (p *zoneinfoParser) endPageset() error {
	if p.ps == nil {
		return nil
	}
	if missing := pAll &^ p.psSeen; missing != 0 {
		name := "count"
		if missing&pCount == 0 {
			name = "high"
			if missing&pHigh == 0 {
				name = "batch"
			}
		}
		return perr(zoneinfoFile, p.psLine, "cpu %d block has no %q line", p.ps.CPU, name)
	}
	p.ps = nil
	return nil
}

// parseProtection parses " (0, 3019, 5707, 5707, 5707)".
func parseProtection(s string) ([]int64, bool) {
	s = trimSpace(s)
	if len(s) < 3 || s[0] != '(' || s[len(s)-1] != ')' {
		return nil, false
	}
	s = s[1 : len(s)-1]
	out := make([]int64, 0, strings.Count(s, ",")+1)
	for {
		var f string
		i := strings.IndexByte(s, ',')
		if i < 0 {
			f, s = s, ""
		} else {
			f, s = s[:i], s[i+1:]
		}
		v, ok := atoi(trimSpace(f))
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if i < 0 {
			return out, true
		}
	}
}

// kvPut sets a numeric key, keeping KV's invariants; maps are allocated
// lazily with room for hint keys.
func kvPut(kv *KV, key string, v int64, hint int) {
	if kv.Num == nil {
		kv.Num = make(map[string]int64, hint)
		kv.Keys = make([]string, 0, hint)
	}
	before := len(kv.Num)
	kv.Num[key] = v
	if len(kv.Num) > before {
		kv.Keys = append(kv.Keys, key)
	}
}
