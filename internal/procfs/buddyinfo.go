package procfs

// /proc/buddyinfo (mm/vmstat.c, frag_show_print), 2.6+:
//
//	Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3
//	Node 0, zone    DMA32      1      2      4      2      5      4      3      3      4      2    752
//	Node 0, zone   Normal   4627   3002   2425   1984   1138    645    290    186    183    103    370
//
// The free blocks of each order (block = 2^order pages of FS.PageSize) per
// populated zone. The number of orders is NR_PAGE_ORDERS (MAX_ORDER before
// 6.4): 11 on x86-64, up to 14 on arm64 with 64 KiB pages; never assume it.
// Lines end with a blank.

import "strings"

// Buddyinfo reads proc/buddyinfo: free blocks per order, per node and zone.
func (f FS) Buddyinfo() ([]Buddy, error) {
	return parseFile(f, "proc/buddyinfo", func(data []byte) ([]Buddy, error) {
		return ParseBuddyinfo(data)
	})
}

const buddyinfoFile = "proc/buddyinfo"

// ParseBuddyinfo parses proc/buddyinfo.
func ParseBuddyinfo(data []byte) ([]Buddy, error) {
	s := string(data)
	out := make([]Buddy, 0, lineHint(s, 24))
	for line, t := range lines(s) {
		word, rest := nextField(t)
		node, rest := nextField(rest)
		zword, rest := nextField(rest)
		zone, rest := nextField(rest)
		n, ok := atou(strings.TrimSuffix(node, ","))
		if word != "Node" || !ok || n > 1<<30 || !strings.HasSuffix(node, ",") || zword != "zone" || zone == "" {
			return nil, perr(buddyinfoFile, line, "bad line %s", quote(t))
		}
		b := Buddy{Node: int(n), Zone: zone, Blocks: make([]int64, 0, countFields(rest))}
		for {
			var f string
			f, rest = nextField(rest)
			if f == "" {
				break
			}
			v, ok := atou(f)
			if !ok {
				return nil, perr(buddyinfoFile, line, "bad count %s", quote(f))
			}
			b.Blocks = append(b.Blocks, v)
		}
		if len(b.Blocks) == 0 {
			return nil, perr(buddyinfoFile, line, "no counts in %s", quote(t))
		}
		out = append(out, b)
	}
	return out, nil
}
