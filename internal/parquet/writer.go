// Package parquet writes Apache Parquet files of one flat schema of
// required columns: strings (dictionary-encoded), 64-bit integers,
// millisecond UTC timestamps and doubles (plain-encoded), every page
// GZIP-compressed with the standard library, with each column chunk's
// minimum and maximum in the footer. It is the writer the store's export
// needs and no more: no nulls, no nesting, no reading. Rows are buffered one
// row group at a time, so memory follows the row group's size, not the
// file's.
//
// The layout, from the format's specification (parquet.thrift): "PAR1",
// the row groups (for each column a dictionary page when the column has
// one, then its data pages, each a Thrift compact PageHeader and the
// compressed body), the FileMetaData in the Thrift compact protocol, its
// length in four little-endian bytes, and "PAR1" again.
package parquet

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// Type is a column's type.
type Type uint8

// The column types.
const (
	// String: BYTE_ARRAY annotated STRING, dictionary-encoded (a new
	// dictionary for each row group). The bytes are written as given.
	String Type = iota + 1
	// Int64: INT64, plain.
	Int64
	// TimestampMillis: INT64 annotated TIMESTAMP(MILLIS, UTC), plain.
	TimestampMillis
	// Double: DOUBLE, plain.
	Double
)

// Column names and types one column.
type Column struct {
	Name string
	Type Type
}

// Options tune a Writer; zero values take the defaults.
type Options struct {
	// CreatedBy goes to the footer's created_by ("memdoctor").
	CreatedBy string
	// RowGroupRows bounds the rows of a row group (default 1,048,576).
	RowGroupRows int
	// PageRows bounds the rows of a data page (default 65,536).
	PageRows int
	// DictionaryBytes ends a row group once a string column's dictionary
	// holds this many bytes (default 4 MiB).
	DictionaryBytes int
	// Level is the GZIP level (default gzip.DefaultCompression).
	Level int
}

// MaxStatisticsBytes is the longest string minimum or maximum the footer
// holds: a string column chunk whose minimum or maximum is longer has none
// (they would only make the footer large).
const MaxStatisticsBytes = 1024

// Thrift enum values of parquet.thrift.
const (
	typeInt64     = 2
	typeDouble    = 5
	typeByteArray = 6

	convertedUTF8            = 0
	convertedTimestampMillis = 9

	repetitionRequired = 0

	encodingPlain         = 0
	encodingRLE           = 3
	encodingRLEDictionary = 8

	codecGzip = 2

	pageData       = 0
	pageDictionary = 2
)

var magic = []byte("PAR1")

// Writer writes one Parquet file. Each row is one call of the setter of
// each column (String, Int64 or Double, by column index) and EndRow; Close
// writes the last row group and the footer. The first error sticks: every
// later call returns it.
type Writer struct {
	w      io.Writer
	opts   Options
	cols   []*column
	off    int64 // bytes written so far
	rows   int   // rows in the current row group
	page   int   // rows in the current page
	total  int64
	groups []rowGroup
	gz     *gzip.Writer
	zbuf   bytes.Buffer
	body   []byte
	hdr    compact
	err    error
	closed bool
}

type column struct {
	Column
	// The current page: dictionary indices or plain values.
	idx   []uint32
	plain []byte
	// The row group's dictionary (String).
	dict      map[string]uint32
	dictVals  []string
	dictBytes int
	last      string // the last value and its index: runs skip the map
	lastIdx   uint32
	hasLast   bool
	// The row group's data pages, compressed, with their headers.
	pages        []byte
	uncompressed int64 // the data pages' bytes before compression, headers included
	values       int64
	// Statistics of the row group.
	has         bool
	minS, maxS  string
	minI, maxI  int64
	minF, maxF  float64
	nans        int64
	hasFinite   bool
	longStrings bool
}

type chunkMeta struct {
	dictOffset, dataOffset   int64
	compressed, uncompressed int64
	values                   int64
	stats                    []byte // a Thrift compact Statistics, without its field header
}

type rowGroup struct {
	rows, offset, compressed, uncompressed int64
	chunks                                 []chunkMeta
}

// NewWriter starts a file of the columns cols on w ("PAR1" is written at
// once).
func NewWriter(w io.Writer, cols []Column, opts Options) (*Writer, error) {
	if len(cols) == 0 {
		return nil, errors.New("parquet: no columns")
	}
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = 1 << 20
	}
	if opts.PageRows <= 0 {
		opts.PageRows = 1 << 16
	}
	if opts.DictionaryBytes <= 0 {
		opts.DictionaryBytes = 4 << 20
	}
	if opts.Level == 0 {
		opts.Level = gzip.DefaultCompression
	}
	pw := &Writer{w: w, opts: opts}
	seen := map[string]bool{}
	for _, c := range cols {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("parquet: column name %q empty or repeated", c.Name)
		}
		seen[c.Name] = true
		if c.Type < String || c.Type > Double {
			return nil, fmt.Errorf("parquet: column %s: unknown type %d", c.Name, c.Type)
		}
		col := &column{Column: c}
		if c.Type == String {
			col.dict = map[string]uint32{}
		}
		pw.cols = append(pw.cols, col)
	}
	gz, err := gzip.NewWriterLevel(&pw.zbuf, opts.Level)
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	pw.gz = gz
	pw.write(magic)
	return pw, pw.err
}

func (pw *Writer) write(b []byte) {
	if pw.err != nil {
		return
	}
	n, err := pw.w.Write(b)
	pw.off += int64(n)
	if err != nil {
		pw.err = err
	}
}

func (pw *Writer) column(i int, t Type) *column {
	if i < 0 || i >= len(pw.cols) {
		pw.fail(fmt.Errorf("parquet: no column %d", i))
		return nil
	}
	c := pw.cols[i]
	if c.Type != t && (t != Int64 || c.Type != TimestampMillis) {
		pw.fail(fmt.Errorf("parquet: column %s is not of the type written", c.Name))
		return nil
	}
	return c
}

func (pw *Writer) fail(err error) {
	if pw.err == nil {
		pw.err = err
	}
}

// String sets string column i of the current row.
func (pw *Writer) String(i int, s string) {
	c := pw.column(i, String)
	if c == nil {
		return
	}
	if c.hasLast && s == c.last {
		c.idx = append(c.idx, c.lastIdx)
		return
	}
	k, ok := c.dict[s]
	if !ok {
		k = uint32(len(c.dictVals))
		c.dict[s] = k
		c.dictVals = append(c.dictVals, s)
		c.dictBytes += 4 + len(s)
		widen(&c.minS, &c.maxS, &c.has, s) // each distinct value once
		if len(s) > MaxStatisticsBytes {
			c.longStrings = true
		}
	}
	c.last, c.lastIdx, c.hasLast = s, k, true
	c.idx = append(c.idx, k)
}

// Int64 sets integer or timestamp column i of the current row.
func (pw *Writer) Int64(i int, v int64) {
	c := pw.column(i, Int64)
	if c == nil {
		return
	}
	c.plain = binary.LittleEndian.AppendUint64(c.plain, uint64(v))
	widen(&c.minI, &c.maxI, &c.has, v)
}

// Double sets double column i of the current row.
func (pw *Writer) Double(i int, v float64) {
	c := pw.column(i, Double)
	if c == nil {
		return
	}
	c.plain = binary.LittleEndian.AppendUint64(c.plain, math.Float64bits(v))
	c.has = true
	if math.IsNaN(v) {
		c.nans++
		return
	}
	widen(&c.minF, &c.maxF, &c.hasFinite, v)
}

// widen extends the range [*lo, *hi] to v; *seen says whether the range
// holds a value yet, and is set.
func widen[T cmp.Ordered](lo, hi *T, seen *bool, v T) {
	switch {
	case !*seen:
		*lo, *hi, *seen = v, v, true
	case v < *lo:
		*lo = v
	case v > *hi:
		*hi = v
	}
}

// EndRow ends the current row: every column must have been set once.
func (pw *Writer) EndRow() error {
	if pw.err != nil {
		return pw.err
	}
	if pw.closed {
		return errors.New("parquet: write after Close")
	}
	pw.page++
	dictFull := false
	for _, c := range pw.cols {
		n := len(c.plain) / 8
		if c.Type == String {
			n = len(c.idx)
			dictFull = dictFull || c.dictBytes >= pw.opts.DictionaryBytes
		}
		if n != pw.page {
			pw.err = fmt.Errorf("parquet: row %d sets column %s %d times", pw.total+int64(pw.rows), c.Name, n-pw.page+1)
			return pw.err
		}
	}
	pw.rows++
	if pw.page >= pw.opts.PageRows {
		pw.flushPages()
	}
	if pw.rows >= pw.opts.RowGroupRows || dictFull {
		pw.flushRowGroup()
	}
	return pw.err
}

// compress returns body GZIP-compressed (in zbuf: valid until the next call).
func (pw *Writer) compress(body []byte) []byte {
	pw.zbuf.Reset()
	pw.gz.Reset(&pw.zbuf)
	if _, err := pw.gz.Write(body); err != nil {
		pw.fail(err)
	}
	if err := pw.gz.Close(); err != nil {
		pw.fail(err)
	}
	return pw.zbuf.Bytes()
}

// pageHeader encodes a PageHeader of a data page (dict false) or a
// dictionary page into pw.hdr.
func (pw *Writer) pageHeader(dict bool, values, uncompressed, compressed int, enc int32) []byte {
	if max(uncompressed, compressed) > math.MaxInt32 {
		pw.fail(fmt.Errorf("parquet: a page of %d bytes is larger than the format allows", max(uncompressed, compressed)))
	}
	h := &pw.hdr
	h.b, h.last, h.cur = h.b[:0], h.last[:0], 0
	if dict {
		h.i32(1, pageDictionary)
	} else {
		h.i32(1, pageData)
	}
	h.i32(2, int32(uncompressed))
	h.i32(3, int32(compressed))
	if dict {
		h.begin(7) // DictionaryPageHeader
		h.i32(1, int32(values))
		h.i32(2, enc)
		h.end()
	} else {
		h.begin(5) // DataPageHeader
		h.i32(1, int32(values))
		h.i32(2, enc)
		h.i32(3, encodingRLE) // no levels: every column is required
		h.i32(4, encodingRLE)
		h.end()
	}
	h.b = append(h.b, 0)
	return h.b
}

// flushPages ends the current page of every column.
func (pw *Writer) flushPages() {
	if pw.page == 0 {
		return
	}
	for _, c := range pw.cols {
		body := c.plain
		enc := int32(encodingPlain)
		if c.Type == String {
			width := max(1, bits.Len(uint(len(c.dictVals)-1)))
			pw.body = append(pw.body[:0], byte(width))
			pw.body = appendHybrid(pw.body, c.idx, width)
			body = pw.body
			enc = encodingRLEDictionary
		}
		z := pw.compress(body)
		h := pw.pageHeader(false, pw.page, len(body), len(z), enc)
		c.pages = append(c.pages, h...)
		c.pages = append(c.pages, z...)
		c.uncompressed += int64(len(h) + len(body))
		c.values += int64(pw.page)
		c.idx, c.plain = c.idx[:0], c.plain[:0]
	}
	pw.page = 0
}

// flushRowGroup writes the current row group.
func (pw *Writer) flushRowGroup() {
	pw.flushPages()
	if pw.rows == 0 || pw.err != nil {
		return
	}
	g := rowGroup{rows: int64(pw.rows), offset: pw.off}
	for _, c := range pw.cols {
		m := chunkMeta{values: c.values, dictOffset: -1}
		start := pw.off
		if c.Type == String {
			pw.body = pw.body[:0]
			for _, s := range c.dictVals {
				pw.body = binary.LittleEndian.AppendUint32(pw.body, uint32(len(s)))
				pw.body = append(pw.body, s...)
			}
			z := pw.compress(pw.body)
			h := pw.pageHeader(true, len(c.dictVals), len(pw.body), len(z), encodingPlain)
			m.dictOffset = pw.off
			m.uncompressed += int64(len(h) + len(pw.body))
			pw.write(h)
			pw.write(z)
		}
		m.dataOffset = pw.off
		pw.write(c.pages)
		m.compressed = pw.off - start
		m.uncompressed += c.uncompressed
		m.stats = c.statistics()
		g.chunks = append(g.chunks, m)
		g.compressed += m.compressed
		g.uncompressed += m.uncompressed
		c.reset()
	}
	pw.groups = append(pw.groups, g)
	pw.total += int64(pw.rows)
	pw.rows = 0
}

func (c *column) reset() {
	c.pages = c.pages[:0]
	c.uncompressed, c.values = 0, 0
	c.has, c.hasFinite, c.longStrings, c.nans = false, false, false, 0
	c.minS, c.maxS = "", ""
	if c.Type == String {
		clear(c.dict)
		c.dictVals = c.dictVals[:0]
		c.dictBytes = 0
		c.hasLast = false
		c.last = ""
	}
}

// statistics encodes the row group's Statistics of c: null_count, and
// min_value and max_value when known (doubles: over the values other than
// NaN, with nan_count; a zero minimum written -0, a zero maximum +0, as
// parquet.thrift asks).
func (c *column) statistics() []byte {
	var s compact
	s.i64(3, 0) // null_count
	var lo, hi []byte
	switch c.Type {
	case String:
		if c.has && !c.longStrings {
			lo, hi = []byte(c.minS), []byte(c.maxS)
		}
	case Int64, TimestampMillis:
		if c.has {
			lo = binary.LittleEndian.AppendUint64(nil, uint64(c.minI))
			hi = binary.LittleEndian.AppendUint64(nil, uint64(c.maxI))
		}
	case Double:
		if c.hasFinite {
			mn, mx := c.minF, c.maxF
			if mn == 0 {
				mn = math.Copysign(0, -1)
			}
			if mx == 0 {
				mx = 0
			}
			lo = binary.LittleEndian.AppendUint64(nil, math.Float64bits(mn))
			hi = binary.LittleEndian.AppendUint64(nil, math.Float64bits(mx))
		}
	}
	if lo != nil {
		s.binary(5, string(hi))
		s.binary(6, string(lo))
		s.boolean(7, true)
		s.boolean(8, true)
	}
	if c.Type == Double {
		s.i64(9, c.nans)
	}
	return s.b
}

// Close writes the last row group and the footer. It does not close the
// underlying writer.
func (pw *Writer) Close() error {
	if pw.closed {
		return pw.err
	}
	if pw.err == nil {
		for _, c := range pw.cols {
			n := len(c.plain) / 8
			if c.Type == String {
				n = len(c.idx)
			}
			if n != pw.page {
				pw.fail(fmt.Errorf("parquet: Close inside a row: column %s has %d values of %d", c.Name, n, pw.page))
			}
		}
	}
	pw.flushRowGroup()
	pw.closed = true
	if pw.err != nil {
		return pw.err
	}
	footer := pw.footer()
	pw.write(footer)
	pw.write(binary.LittleEndian.AppendUint32(nil, uint32(len(footer))))
	pw.write(magic)
	return pw.err
}

// footer encodes the FileMetaData.
func (pw *Writer) footer() []byte {
	var f compact
	f.i32(1, 2) // version
	f.list(2, ctStruct, 1+len(pw.cols))
	f.begin(0) // the root
	f.binary(4, "schema")
	f.i32(5, int32(len(pw.cols)))
	f.end()
	for _, c := range pw.cols {
		f.begin(0)
		switch c.Type {
		case String:
			f.i32(1, typeByteArray)
		case Int64, TimestampMillis:
			f.i32(1, typeInt64)
		case Double:
			f.i32(1, typeDouble)
		}
		f.i32(3, repetitionRequired)
		f.binary(4, c.Name)
		switch c.Type {
		case String:
			f.i32(6, convertedUTF8)
			f.begin(10) // LogicalType
			f.begin(1)  // STRING
			f.end()
			f.end()
		case TimestampMillis:
			f.i32(6, convertedTimestampMillis)
			f.begin(10) // LogicalType
			f.begin(8)  // TIMESTAMP
			f.boolean(1, true)
			f.begin(2) // unit
			f.begin(1) // MILLIS
			f.end()
			f.end()
			f.end()
			f.end()
		}
		f.end()
	}
	f.i64(3, pw.total)
	f.list(4, ctStruct, len(pw.groups))
	for _, g := range pw.groups {
		f.begin(0)
		f.list(1, ctStruct, len(g.chunks))
		for i, m := range g.chunks {
			c := pw.cols[i]
			f.begin(0)
			f.i64(2, 0) // file_offset: deprecated, 0
			f.begin(3)  // ColumnMetaData
			switch c.Type {
			case String:
				f.i32(1, typeByteArray)
				f.list(2, ctI32, 2)
				f.elemI32(encodingPlain)
				f.elemI32(encodingRLEDictionary)
			case Int64, TimestampMillis:
				f.i32(1, typeInt64)
				f.list(2, ctI32, 1)
				f.elemI32(encodingPlain)
			case Double:
				f.i32(1, typeDouble)
				f.list(2, ctI32, 1)
				f.elemI32(encodingPlain)
			}
			f.list(3, ctBinary, 1)
			f.bytes(c.Name)
			f.i32(4, codecGzip)
			f.i64(5, m.values)
			f.i64(6, m.uncompressed)
			f.i64(7, m.compressed)
			f.i64(9, m.dataOffset)
			if m.dictOffset >= 0 {
				f.i64(11, m.dictOffset)
			}
			f.field(12, ctStruct)
			f.b = append(f.b, m.stats...)
			f.b = append(f.b, 0)
			f.end()
			f.end()
		}
		f.i64(2, g.uncompressed)
		f.i64(3, g.rows)
		f.i64(5, g.offset)
		f.i64(6, g.compressed)
		f.end()
	}
	f.binary(6, pw.opts.CreatedBy)
	f.list(7, ctStruct, len(pw.cols))
	for range pw.cols {
		f.begin(0)
		f.begin(1) // TYPE_ORDER
		f.end()
		f.end()
	}
	f.b = append(f.b, 0)
	return f.b
}
