package parquet

import "encoding/binary"

// appendHybrid appends vs in Parquet's RLE/bit-packing hybrid encoding at
// width bits a value (1 to 32): a run of eight or more equal values becomes
// one repeated run (a varint header of count<<1, then the value in
// ceil(width/8) little-endian bytes), everything else bit-packed runs of
// groups of eight (a varint header of groups<<1|1, then the values packed
// from the least significant bit up). A bit-packed run may be padded with
// zeros only at the very end, so literals before a repeated run are first
// rounded up to a multiple of eight with values taken from that run.
func appendHybrid(b []byte, vs []uint32, width int) []byte {
	lit := 0 // the first value not yet written
	for i := 0; i < len(vs); {
		j := i + 1
		for j < len(vs) && vs[j] == vs[i] {
			j++
		}
		if j-i >= 8 {
			start := i
			if pending := i - lit; pending%8 != 0 {
				start += 8 - pending%8
			}
			if j-start >= 8 {
				if start > lit {
					b = appendPacked(b, vs[lit:start], width)
				}
				b = appendRepeated(b, vs[i], j-start, width)
				lit = j
			}
		}
		i = j
	}
	if lit < len(vs) {
		b = appendPacked(b, vs[lit:], width)
	}
	return b
}

func appendRepeated(b []byte, v uint32, n, width int) []byte {
	b = binary.AppendUvarint(b, uint64(n)<<1)
	for k := 0; k < (width+7)/8; k++ {
		b = append(b, byte(v>>(8*k)))
	}
	return b
}

// appendPacked writes vs as one bit-packed run, padded with zeros to a
// multiple of eight values.
func appendPacked(b []byte, vs []uint32, width int) []byte {
	groups := (len(vs) + 7) / 8
	b = binary.AppendUvarint(b, uint64(groups)<<1|1)
	var acc uint64
	var bits uint
	for k := 0; k < groups*8; k++ {
		if k < len(vs) {
			acc |= uint64(vs[k]) << bits
		}
		bits += uint(width)
		for bits >= 8 {
			b = append(b, byte(acc))
			acc >>= 8
			bits -= 8
		}
	}
	return b // eight values of width bits fill whole bytes: nothing is left in acc
}
