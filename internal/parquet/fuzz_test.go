package parquet

import (
	"encoding/binary"
	"math"
	"testing"
)

// fuzzRows turns fuzzer bytes into options and rows: strings of any bytes
// (often the previous one again, for runs), integers and doubles of any
// bits (NaN with any payload, infinities, both zeros). Rows past the
// 1,024th are left out: with a row group a row, each costs some 100 µs of
// compression, and the fuzzer's long inputs would slow it to a crawl.
func fuzzRows(data []byte) (Options, []row) {
	take := func(n int) []byte {
		n = min(n, len(data))
		b := data[:n]
		data = data[n:]
		return b
	}
	head := append(take(3), 0, 0, 0)
	opts := Options{PageRows: 1 + int(head[0]%16), RowGroupRows: 1 + int(head[1]%64), DictionaryBytes: 1 + int(head[2])*8}
	var rows []row
	var s string
	for len(data) > 0 && len(rows) < 1024 {
		k := take(1)[0]
		if k&0x80 == 0 {
			s = string(take(int(k % 40)))
		}
		var num [16]byte
		copy(num[:], take(int(k>>3&0x0f)+1))
		rows = append(rows, row{
			S:  s,
			I:  int64(binary.LittleEndian.Uint64(num[:8])),
			TS: int64(binary.LittleEndian.Uint64(num[8:])) >> (k & 7),
			D:  math.Float64frombits(binary.LittleEndian.Uint64(num[1:9])),
		})
	}
	return opts, rows
}

// FuzzWriter writes what the fuzzer makes and reads it back with
// parquet-go: every row must come back as written.
func FuzzWriter(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 5, 1, 0x05, 'h', 'o', 's', 't', '1', 0x85, 0x85, 0x85, 0x7f})
	f.Add([]byte{0, 0, 0, 0xff, 0xf8, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		opts, want := fuzzRows(data)
		_, got := readGo(t, writeRows(t, want, opts))
		sameRows(t, got, want)
	})
}
