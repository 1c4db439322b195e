// Package xor encodes and decodes XOR chunks: the compressed float samples
// of one series that the store keeps in its chunks table.
//
// The encoding is the one of Prometheus' TSDB (its "XOR" chunk encoding),
// which follows the Gorilla paper (Pelkonen et al., VLDB 2015) with
// timestamp buckets sized for milliseconds. Chunks written here are the
// same bytes Prometheus writes for the same samples, and each side reads
// the other's; stores written before this package existed read unchanged.
//
// A chunk is a bit stream, most significant bit first, with no alignment
// between fields:
//
//	count     16 bits, big-endian: the number of samples
//	sample 0  timestamp as a signed varint (zigzag), value as 64 bits
//	sample 1  timestamp delta to sample 0 as an unsigned varint, value as below
//	sample i  timestamp: the change of the delta (delta of delta, dod):
//	            0                 dod == 0
//	            10   + 14 bits    -8191 <= dod <= 8192
//	            110  + 17 bits    -65535 <= dod <= 65536
//	            1110 + 20 bits    -524287 <= dod <= 524288
//	            1111 + 64 bits    any other
//	          value: x = bits(v) XOR bits(previous v)
//	            0                                         x == 0
//	            10 + the window's bits of x               x's set bits lie in the
//	                                                      window the last 11 set
//	            11 + 5 bits leading zeros (at most 31) + 6 bits length
//	               (64 written as 0) + the bits of x between them: a new window
//
// The varints are the 7-bit groups of encoding/binary, written 8 bits at a
// time into the stream. Within a bucket the bits of dod are its low bits
// (two's complement); a bucket value above half its range is negative. The
// last byte is padded with zero bits.
package xor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
)

// MaxSamples is the most samples one chunk can count in its 16-bit header.
const MaxSamples = math.MaxUint16

// noWindow marks that no value has set the leading/trailing window yet.
const noWindow = 0xff

// Chunk is an XOR chunk being written.
type Chunk struct {
	b    []byte // header and bit stream
	free uint   // unused low bits of the last byte of b
	n    uint16

	t      int64
	v      uint64 // bits of the last value
	tDelta uint64

	leading, trailing uint8
}

// New returns an empty chunk.
func New() *Chunk {
	return &Chunk{b: make([]byte, 2, 128), leading: noWindow}
}

// NumSamples is the number of samples appended.
func (c *Chunk) NumSamples() int { return int(c.n) }

// Bytes is the encoded chunk, header included. It stays valid, and grows,
// as samples are appended: copy it to keep it past the next Append.
func (c *Chunk) Bytes() []byte { return c.b }

// Append adds a sample. Timestamps are expected to increase; the encoding
// accepts any, as Prometheus' does. It returns false, adding nothing, when
// the chunk already holds MaxSamples.
func (c *Chunk) Append(t int64, v float64) bool {
	vb := math.Float64bits(v)
	var tDelta uint64
	switch c.n {
	case 0:
		c.writeVarint(binary.AppendVarint(make([]byte, 0, binary.MaxVarintLen64), t))
		c.writeBits(vb, 64)
	case 1:
		tDelta = uint64(t - c.t)
		c.writeVarint(binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64), tDelta))
		c.writeValue(vb)
	case MaxSamples:
		return false
	default:
		tDelta = uint64(t - c.t)
		dod := int64(tDelta - c.tDelta)
		switch {
		case dod == 0:
			c.writeZero()
		case inBucket(dod, 14):
			c.writeBits(0b10, 2)
			c.writeBits(uint64(dod), 14)
		case inBucket(dod, 17):
			c.writeBits(0b110, 3)
			c.writeBits(uint64(dod), 17)
		case inBucket(dod, 20):
			c.writeBits(0b1110, 4)
			c.writeBits(uint64(dod), 20)
		default:
			c.writeBits(0b1111, 4)
			c.writeBits(uint64(dod), 64)
		}
		c.writeValue(vb)
	}
	c.t, c.v, c.tDelta = t, vb, tDelta
	c.n++
	binary.BigEndian.PutUint16(c.b, c.n)
	return true
}

// inBucket reports whether dod fits a bucket of n bits: the range is one
// wider on the positive side, as the decoder reads the middle value as
// positive.
func inBucket(dod int64, n uint) bool {
	return -(1<<(n-1))+1 <= dod && dod <= 1<<(n-1)
}

// writeValue writes the XOR of a value against the last one.
func (c *Chunk) writeValue(vb uint64) {
	x := vb ^ c.v
	if x == 0 {
		c.writeZero()
		return
	}
	// Five bits hold at most 31 leading zeros; more are written as
	// meaningful bits.
	lead := uint8(min(bits.LeadingZeros64(x), 31))
	trail := uint8(bits.TrailingZeros64(x))
	if c.leading != noWindow && lead >= c.leading && trail >= c.trailing {
		c.writeBits(0b10, 2)
		c.writeBits(x>>c.trailing, uint(64-c.leading-c.trailing))
		return
	}
	c.leading, c.trailing = lead, trail
	sig := 64 - lead - trail // 1..64; 64 is written as 0
	c.writeBits(0b11, 2)
	c.writeBits(uint64(lead), 5)
	c.writeBits(uint64(sig), 6)
	c.writeBits(x>>trail, uint(sig))
}

func (c *Chunk) writeVarint(b []byte) {
	for _, x := range b {
		c.writeBits(uint64(x), 8)
	}
}

// writeZero appends a 0 bit, the most common code: an unchanged interval
// or value. Free bits are zero already.
func (c *Chunk) writeZero() {
	if c.free == 0 {
		c.b = append(c.b, 0)
		c.free = 8
	}
	c.free--
}

// writeBits appends the low n bits of u (n at most 64), most significant
// first.
func (c *Chunk) writeBits(u uint64, n uint) {
	if n == 0 {
		return
	}
	u <<= 64 - n // left-aligned; the bits below are zero
	if c.free > 0 {
		c.b[len(c.b)-1] |= byte(u>>56) >> (8 - c.free)
		if n <= c.free {
			c.free -= n
			return
		}
		u <<= c.free
		n -= c.free
	}
	// The rest in whole bytes, the last padded with zero bits: eight
	// stored past the end, as many as hold bits kept.
	whole := (n + 7) / 8
	l := len(c.b)
	if cap(c.b)-l < 8 {
		c.b = slices.Grow(c.b, 8)
	}
	binary.BigEndian.PutUint64(c.b[l:l+8], u)
	c.b = c.b[:l+int(whole)]
	c.free = 8*whole - n
}

// Errors of a chunk that cannot be decoded. They wrap ErrCorrupt.
var (
	// ErrCorrupt is what every decoding error wraps.
	ErrCorrupt = errors.New("corrupt XOR chunk")
	errShort   = fmt.Errorf("%w: shorter than its 2-byte header", ErrCorrupt)
)

// Iterator reads the samples of an encoded chunk. The zero Iterator reads
// nothing; Reset points it at a chunk.
type Iterator struct {
	b   []byte // the bit stream after the header
	i   int    // next byte of b to load into buf
	buf uint64 // the next bits of the stream, most significant first
	nb  uint   // how many bits of buf are the stream's

	total, read uint16
	t           int64
	v           uint64
	tDelta      uint64

	leading, trailing uint8
	err               error
}

// Reset makes the iterator read data from its first sample. The iterator
// reads data in place: it must not change while it is read.
func (it *Iterator) Reset(data []byte) {
	*it = Iterator{leading: noWindow}
	if len(data) < 2 {
		it.err = errShort
		return
	}
	it.total = binary.BigEndian.Uint16(data)
	it.b = data[2:]
}

// At is the current sample.
func (it *Iterator) At() (int64, float64) { return it.t, math.Float64frombits(it.v) }

// Err is why Next stopped before the header's count of samples, or nil.
func (it *Iterator) Err() error { return it.err }

// Next moves to the next sample and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.err != nil || it.read == it.total {
		return false
	}
	switch it.read {
	case 0:
		t, err := binary.ReadVarint(byteReader{it})
		if err != nil {
			return it.fail("first timestamp", err)
		}
		v, ok := it.read64()
		if !ok {
			return it.fail("first value", io.ErrUnexpectedEOF)
		}
		it.t, it.v = t, v
		it.read++
		return true
	case 1:
		d, err := binary.ReadUvarint(byteReader{it})
		if err != nil {
			return it.fail("timestamp", err)
		}
		it.tDelta = d
		it.t += int64(d)
		return it.readValue()
	}
	// The common case first: an unchanged interval is one 0 bit.
	if it.nb == 0 {
		it.fill()
	}
	if it.nb > 0 && it.buf>>63 == 0 {
		it.buf <<= 1
		it.nb--
		it.t += int64(it.tDelta)
		return it.readValue()
	}
	// Count the leading 1 bits of the bucket's code, at most four.
	var ones uint
	for ones < 4 {
		b, ok := it.readBits(1)
		if !ok {
			return it.fail("timestamp", io.ErrUnexpectedEOF)
		}
		if b == 0 {
			break
		}
		ones++
	}
	var dod int64
	switch ones {
	case 1, 2, 3:
		n := [...]uint{1: 14, 2: 17, 3: 20}[ones]
		u, ok := it.readBits(n)
		if !ok {
			return it.fail("timestamp", io.ErrUnexpectedEOF)
		}
		if u > 1<<(n-1) {
			u -= 1 << n
		}
		dod = int64(u)
	case 4:
		u, ok := it.read64()
		if !ok {
			return it.fail("timestamp", io.ErrUnexpectedEOF)
		}
		dod = int64(u)
	}
	it.tDelta = uint64(int64(it.tDelta) + dod)
	it.t += int64(it.tDelta)
	return it.readValue()
}

// readValue reads the XOR-encoded value of the current sample.
func (it *Iterator) readValue() bool {
	if it.nb < 2 {
		it.fill()
	}
	if it.nb < 1 {
		return it.fail("value", io.ErrUnexpectedEOF)
	}
	if it.buf>>63 == 0 {
		it.buf <<= 1
		it.nb--
		it.read++
		return true
	}
	if it.nb < 2 {
		return it.fail("value", io.ErrUnexpectedEOF)
	}
	reuse := it.buf>>62 == 0b10
	it.buf <<= 2
	it.nb -= 2
	var sig uint
	if reuse {
		if it.leading == noWindow {
			return it.fail("value", errors.New("reuses a window no value set"))
		}
		sig = 64 - uint(it.leading) - uint(it.trailing)
	} else {
		u, ok := it.readBits(11)
		if !ok {
			return it.fail("value", io.ErrUnexpectedEOF)
		}
		lead, n := uint(u>>6), uint(u&63)
		if n == 0 {
			n = 64
		}
		if lead+n > 64 {
			return it.fail("value", fmt.Errorf("%d leading zeros and %d meaningful bits", lead, n))
		}
		it.leading, it.trailing = uint8(lead), uint8(64-lead-n)
		sig = n
	}
	var x uint64
	var ok bool
	if sig > 56 {
		// More than readBits takes at once: the high part, then 32 bits.
		var lo uint64
		if x, ok = it.readBits(sig - 32); ok {
			lo, ok = it.readBits(32)
			x = x<<32 | lo
		}
	} else {
		x, ok = it.readBits(sig)
	}
	if !ok {
		return it.fail("value", io.ErrUnexpectedEOF)
	}
	it.v ^= x << it.trailing
	it.read++
	return true
}

func (it *Iterator) fail(what string, err error) bool {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	it.err = fmt.Errorf("%w: sample %d of %d: %s: %w", ErrCorrupt, int(it.read)+1, it.total, what, err)
	return false
}

// fill loads whole bytes into buf until it holds at least 57 bits or the
// stream ends.
func (it *Iterator) fill() {
	if it.i+8 <= len(it.b) {
		// Eight bytes at once. The bits of the byte that does not fit
		// whole land below nb; the next fill ORs the same bits there.
		w := binary.BigEndian.Uint64(it.b[it.i:])
		it.buf |= w >> it.nb
		k := (64 - it.nb) / 8
		it.i += int(k)
		it.nb += 8 * k
		return
	}
	for it.nb <= 56 && it.i < len(it.b) {
		it.buf |= uint64(it.b[it.i]) << (56 - it.nb)
		it.i++
		it.nb += 8
	}
}

// readBits reads n bits, n at most 56.
func (it *Iterator) readBits(n uint) (uint64, bool) {
	if it.nb < n {
		it.fill()
		if it.nb < n {
			return 0, false
		}
	}
	u := it.buf >> (64 - n)
	it.buf <<= n
	it.nb -= n
	return u, true
}

// read64 reads 64 bits.
func (it *Iterator) read64() (uint64, bool) {
	hi, ok := it.readBits(32)
	if !ok {
		return 0, false
	}
	lo, ok := it.readBits(32)
	return hi<<32 | lo, ok
}

// byteReader reads the stream 8 bits at a time, for the varints.
type byteReader struct{ it *Iterator }

func (r byteReader) ReadByte() (byte, error) {
	b, ok := r.it.readBits(8)
	if !ok {
		return 0, io.EOF
	}
	return byte(b), nil
}
