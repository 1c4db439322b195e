package xor_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/memdoctor/memdoctor/internal/store/xor"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// The differential tests hold this package against Prometheus' own XOR
// chunks, imported by the tests only: the same samples must give the same
// bytes, and each side must read the other's chunks back exactly.

type pt struct {
	t int64
	v float64
}

func encodeOurs(t *testing.T, ps []pt) []byte {
	t.Helper()
	c := xor.New()
	for _, p := range ps {
		if !c.Append(p.t, p.v) {
			t.Fatalf("Append refused sample %d", c.NumSamples())
		}
	}
	if c.NumSamples() != len(ps) {
		t.Fatalf("NumSamples %d, want %d", c.NumSamples(), len(ps))
	}
	return bytes.Clone(c.Bytes())
}

func encodeTheirs(t *testing.T, ps []pt) []byte {
	t.Helper()
	c := chunkenc.NewXORChunk()
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		app.Append(0, p.t, p.v)
	}
	return bytes.Clone(c.Bytes())
}

func decodeOurs(data []byte) ([]pt, error) {
	var out []pt
	var it xor.Iterator
	it.Reset(data)
	for it.Next() {
		t, v := it.At()
		out = append(out, pt{t, v})
	}
	return out, it.Err()
}

func decodeTheirs(data []byte) ([]pt, error) {
	var out []pt
	c, err := chunkenc.FromData(chunkenc.EncXOR, data)
	if err != nil {
		return nil, err
	}
	it := c.Iterator(nil)
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		out = append(out, pt{t, v})
	}
	return out, it.Err()
}

// same compares samples bit for bit (NaN payloads and -0 included).
func same(a, b []pt) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].t != b[i].t || math.Float64bits(a[i].v) != math.Float64bits(b[i].v) {
			return false
		}
	}
	return true
}

// check encodes ps both ways and decodes each chunk both ways.
func check(t *testing.T, name string, ps []pt) {
	t.Helper()
	ours, theirs := encodeOurs(t, ps), encodeTheirs(t, ps)
	if !bytes.Equal(ours, theirs) {
		i := 0
		for i < min(len(ours), len(theirs)) && ours[i] == theirs[i] {
			i++
		}
		t.Fatalf("%s: %d samples: chunks differ from byte %d (ours %d bytes, Prometheus' %d)", name, len(ps), i, len(ours), len(theirs))
	}
	for _, dec := range []struct {
		who string
		fn  func([]byte) ([]pt, error)
	}{{"ours", decodeOurs}, {"Prometheus'", decodeTheirs}} {
		got, err := dec.fn(ours)
		if err != nil {
			t.Fatalf("%s: %s decoder: %v", name, dec.who, err)
		}
		if !same(got, ps) {
			t.Fatalf("%s: %s decoder read %d samples back that differ from the %d written", name, dec.who, len(got), len(ps))
		}
	}
}

// series builds adversarial and random series.
func series() map[string][]pt {
	nan1 := math.Float64frombits(0x7ff8000000000001)
	nan2 := math.Float64frombits(0xfff0000000000123) // negative signalling payload
	staleNaN := math.Float64frombits(0x7ff0000000000002)
	s := map[string][]pt{
		"empty":             nil,
		"one":               {{1700000000000, 42}},
		"two":               {{1700000000000, 1}, {1700000015000, 2}},
		"one negative time": {{-123456789, -1}},
		"special values": {
			{0, math.NaN()}, {1, math.Inf(1)}, {2, math.Inf(-1)}, {3, math.Copysign(0, -1)},
			{4, 0}, {5, nan1}, {6, nan2}, {7, staleNaN}, {8, math.MaxFloat64},
			{9, math.SmallestNonzeroFloat64}, {10, -math.MaxFloat64}, {11, 1}, {12, 1},
		},
		"extreme times": {
			{math.MinInt64, 0}, {math.MaxInt64, 1}, {0, 2}, {math.MinInt64 / 2, 3}, {math.MaxInt64 / 3, 4},
		},
		"decreasing times": {{1000, 1}, {900, 2}, {800, 3}, {-5000, 4}, {-5001, 5}},
		"equal times":      {{1000, 1}, {1000, 2}, {1000, 3}, {1001, 4}},
	}
	// The bucket edges of the delta of delta, both sides of each.
	var edges []pt
	tt, delta := int64(1e12), int64(15000)
	edges = append(edges, pt{tt, 0})
	tt += delta
	edges = append(edges, pt{tt, 0})
	for _, n := range []int64{14, 17, 20} {
		lim := int64(1) << (n - 1)
		for _, dod := range []int64{lim - 1, lim, lim + 1, -lim + 2, -lim + 1, -lim, -lim - 1, 0, 1, -1} {
			delta += dod
			tt += delta
			edges = append(edges, pt{tt, float64(dod)})
		}
	}
	s["bucket edges"] = edges

	// The XOR windows: leading zeros past 31, all 64 bits meaningful,
	// one meaningful bit at each end, a window reused then widened.
	var win []pt
	bitsSeq := []uint64{0, 1, 1 << 63, 3, 0xffffffffffffffff, 0x8000000000000001, 0x00000000ffff0000,
		0x00000000fff00000, 0x0000000000000100, 0x0ff0000000000000, 0x7ff0000000000000, 0x1, 0x2, 0x4, 0x4}
	for i, b := range bitsSeq {
		win = append(win, pt{int64(i) * 10, math.Float64frombits(b)})
	}
	s["xor windows"] = win

	r := rand.New(rand.NewPCG(29, 1))
	regular := make([]pt, 0, 240)
	tt = 1700000000000
	v := 1e9
	for range 240 {
		regular = append(regular, pt{tt, v})
		tt += 15000
		if r.IntN(3) == 0 {
			v += float64(r.IntN(4096) * 4096)
		}
	}
	s["regular gauge 240"] = regular

	irregular := make([]pt, 0, 130)
	tt = -1e10
	for range 130 {
		irregular = append(irregular, pt{tt, r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))})
		switch r.IntN(4) {
		case 0:
			tt += r.Int64N(1 << 40)
		case 1:
			tt += r.Int64N(1 << 18)
		default:
			tt += 15000 + r.Int64N(30) - 15
		}
	}
	s["irregular 130"] = irregular

	random := make([]pt, 0, 500)
	for range 500 {
		random = append(random, pt{int64(r.Uint64()), math.Float64frombits(r.Uint64())})
	}
	s["random bits 500"] = random

	counter := make([]pt, 0, 16384)
	tt, c := 1700000000000, 0.0
	for range 16384 {
		counter = append(counter, pt{tt, c})
		tt += 10000
		c += float64(r.IntN(100))
	}
	s["counter 16384"] = counter
	return s
}

func TestSameBytesAsPrometheus(t *testing.T) {
	for name, ps := range series() {
		check(t, name, ps)
	}
}

func TestFullChunk(t *testing.T) {
	c := xor.New()
	for i := range xor.MaxSamples {
		if !c.Append(int64(i), float64(i%7)) {
			t.Fatalf("sample %d refused", i)
		}
	}
	if c.Append(xor.MaxSamples, 0) {
		t.Fatal("a chunk of MaxSamples took one more")
	}
	if c.NumSamples() != xor.MaxSamples || binary.BigEndian.Uint16(c.Bytes()) != xor.MaxSamples {
		t.Fatalf("count %d, header %d", c.NumSamples(), binary.BigEndian.Uint16(c.Bytes()))
	}
	got, err := decodeOurs(c.Bytes())
	if err != nil || len(got) != xor.MaxSamples {
		t.Fatalf("read %d samples, %v", len(got), err)
	}
}

// Every prefix of a chunk shorter than the whole is cut short: the
// iterator reads what is there and then says the chunk is corrupt.
func TestTruncated(t *testing.T) {
	data := encodeOurs(t, series()["irregular 130"])
	for n := range len(data) {
		got, err := decodeOurs(data[:n])
		if err == nil {
			t.Fatalf("%d of %d bytes: no error (%d samples)", n, len(data), len(got))
		}
		if !errors.Is(err, xor.ErrCorrupt) {
			t.Fatalf("%d bytes: error %v does not wrap ErrCorrupt", n, err)
		}
		if len(got) == 0 && n >= 2+binary.MaxVarintLen64+8 {
			t.Fatalf("%d bytes: not even the first sample read", n)
		}
	}
}

// A window of leading zeros and meaningful bits past 64 bits is refused,
// where Prometheus' reader would shift the value bits away.
func TestBadWindow(t *testing.T) {
	c := xor.New()
	c.Append(0, 0)
	data := bytes.Clone(c.Bytes())
	// Sample 1: delta 1 (varint 0x01), then 11, 31 leading zeros, 40 bits.
	data[1] = 2
	w := []byte{0x01, 0b11_11111_1, 0b10000_000}
	data = append(data, w...)
	data = append(data, make([]byte, 6)...)
	_, err := decodeOurs(data)
	if err == nil || !errors.Is(err, xor.ErrCorrupt) {
		t.Fatalf("error %v, want a corrupt chunk", err)
	}
}

func FuzzSameBytesAsPrometheus(f *testing.F) {
	for _, ps := range series() {
		if len(ps) > 600 {
			continue
		}
		var b []byte
		for _, p := range ps {
			b = binary.BigEndian.AppendUint64(b, uint64(p.t))
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.v))
		}
		f.Add(b, false)
	}
	f.Add([]byte{0, 3, 1, 2, 3, 4}, true)
	f.Fuzz(func(t *testing.T, in []byte, raw bool) {
		if raw {
			// Any bytes as a chunk: what our reader accepts, Prometheus'
			// reads to the same samples.
			if len(in) < 2 {
				return
			}
			ours, err := decodeOurs(in)
			if err != nil {
				return
			}
			theirs, err := decodeTheirs(in)
			if err != nil {
				t.Fatalf("ours read %d samples, Prometheus' failed: %v", len(ours), err)
			}
			if !same(ours, theirs) {
				t.Fatalf("the readers disagree: %v against %v", ours, theirs)
			}
			return
		}
		// The input as samples: times as deltas of a wandering interval,
		// so the buckets all get used, and raw value bits.
		var ps []pt
		var tt, delta int64
		for len(in) >= 16 && len(ps) < 400 {
			delta += int64(binary.BigEndian.Uint64(in)) >> (in[0] % 64)
			tt += delta
			ps = append(ps, pt{tt, math.Float64frombits(binary.BigEndian.Uint64(in[8:]))})
			in = in[16:]
		}
		check(t, "fuzz", ps)
	})
}
