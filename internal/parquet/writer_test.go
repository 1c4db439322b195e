package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	pqgo "github.com/parquet-go/parquet-go"

	"github.com/memdoctor/memdoctor/internal/parquettest"
)

// row is a row of the test schema, as parquet-go reads it.
type row struct {
	S  string  `parquet:"s"`
	I  int64   `parquet:"i"`
	TS int64   `parquet:"ts"`
	D  float64 `parquet:"d"`
}

var testColumns = []Column{{"s", String}, {"i", Int64}, {"ts", TimestampMillis}, {"d", Double}}

func writeRows(t testing.TB, rows []row, opts Options) []byte {
	t.Helper()
	var b bytes.Buffer
	pw, err := NewWriter(&b, testColumns, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		pw.String(0, r.S)
		pw.Int64(1, r.I)
		pw.Int64(2, r.TS)
		pw.Double(3, r.D)
		if err := pw.EndRow(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readGo reads a file of the test schema with parquet-go.
func readGo(t testing.TB, data []byte) (*pqgo.File, []row) {
	t.Helper()
	f, err := pqgo.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet-go cannot open the file: %v", err)
	}
	r := pqgo.NewGenericReader[row](bytes.NewReader(data))
	defer r.Close()
	got := make([]row, r.NumRows())
	n, err := r.Read(got)
	if n != len(got) || err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("parquet-go read %d of %d rows: %v", n, len(got), err)
	}
	return f, got
}

func sameRows(t testing.TB, got, want []row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rows read, %d written", len(got), len(want))
	}
	bad := 0
	for i := range want {
		g, w := got[i], want[i]
		if g.S != w.S || g.I != w.I || g.TS != w.TS || math.Float64bits(g.D) != math.Float64bits(w.D) {
			t.Errorf("row %d: read %+v, wrote %+v", i, g, w)
			if bad++; bad > 5 {
				t.FailNow()
			}
		}
	}
}

// variedRows are n rows that take every path of the encodings: runs of
// equal strings shorter and longer than eight after literals of every
// length modulo eight, distinct strings, the empty string, integers and
// doubles at their extremes, NaN, infinities and both zeros.
func variedRows(n int) []row {
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1.5}
	ints := []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}
	words := []string{"", "vm", "host-a", `{a="1",b="2"}`, "žluťoučký kůň", "日本語", "\x00nul", strings.Repeat("x", 300)}
	rows := make([]row, 0, n)
	x := uint64(0x9e3779b97f4a7c15)
	next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	ts := int64(1_764_000_000_000)
	for len(rows) < n {
		// A run of one string, 1 to 20 rows long; one run in four of
		// strings never seen before.
		run := int(next()%20) + 1
		s := words[next()%uint64(len(words))]
		if next()%4 == 0 {
			s = "series-" + strconv.FormatUint(next()%5000, 10)
		}
		for k := 0; k < run && len(rows) < n; k++ {
			r := row{S: s, TS: ts, I: int64(next())}
			ts += 1000 + int64(next()%7)
			if next()%3 == 0 {
				r.I = ints[next()%uint64(len(ints))]
			}
			r.D = float64(int64(next()%1_000_000)) / 7
			if next()%5 == 0 {
				r.D = specials[next()%uint64(len(specials))]
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func TestWriterRoundTripParquetGo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rows int
		opts Options
	}{
		{"defaults", 20_000, Options{}},
		{"small pages and row groups", 5_003, Options{RowGroupRows: 1000, PageRows: 97}},
		{"one row a page", 50, Options{PageRows: 1}},
		{"one row a row group", 30, Options{RowGroupRows: 1}},
		{"dictionary limit", 3_000, Options{DictionaryBytes: 200}},
		{"fastest gzip", 3_000, Options{Level: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := variedRows(tc.rows)
			data := writeRows(t, want, tc.opts)
			f, got := readGo(t, data)
			sameRows(t, got, want)
			if rgr := tc.opts.RowGroupRows; rgr > 0 {
				if n, w := len(f.RowGroups()), (tc.rows+rgr-1)/rgr; n != w {
					t.Errorf("%d row groups, want %d", n, w)
				}
			}
			if tc.opts.DictionaryBytes > 0 && len(f.RowGroups()) < 2 {
				t.Errorf("a %d-byte dictionary limit left %d row group", tc.opts.DictionaryBytes, len(f.RowGroups()))
			}
		})
	}
}

// TestWriterDictionaryWidths: dictionaries of 1 to 70,000 strings, whose
// indices take 1 to 17 bits, in runs and alone.
func TestWriterDictionaryWidths(t *testing.T) {
	t.Parallel()
	for _, distinct := range []int{1, 2, 3, 255, 256, 257, 65_537, 70_000} {
		t.Run(strconv.Itoa(distinct), func(t *testing.T) {
			t.Parallel()
			var want []row
			for i := range distinct {
				n := 1
				if i%3 == 0 {
					n = 9 // a repeated run between literals
				}
				for range n {
					want = append(want, row{S: "v" + strconv.Itoa(i), TS: int64(len(want))})
				}
			}
			_, got := readGo(t, writeRows(t, want, Options{}))
			sameRows(t, got, want)
		})
	}
}

// TestWriterStatistics: each row group's minimum and maximum, from the
// footer as parquet-go reads it: strings in byte order, doubles without
// NaN and with -0 as minimum and +0 as maximum, none for a chunk of NaN
// only or with a string longer than MaxStatisticsBytes.
func TestWriterStatistics(t *testing.T) {
	t.Parallel()
	const group = 700
	rows := variedRows(6 * group)
	for i := range rows[group : 2*group] {
		rows[group+i].D = math.NaN() // the second row group: NaN only
	}
	rows[3*group+5].S = strings.Repeat("é", MaxStatisticsBytes) // the fourth: one long string
	for i := range rows[4*group : 6*group] {
		// The fifth and sixth: zeros only, the fifth's first -0, the
		// sixth's +0.
		rows[4*group+i].D = 0
		if i%2 == i/group {
			rows[4*group+i].D = math.Copysign(0, -1)
		}
	}
	f, _ := readGo(t, writeRows(t, rows, Options{RowGroupRows: group}))
	md := f.Metadata()
	if len(md.RowGroups) != 6 {
		t.Fatalf("%d row groups, want 6", len(md.RowGroups))
	}
	for g, rg := range md.RowGroups {
		part := rows[g*group : (g+1)*group]
		for c, cc := range rg.Columns {
			st := cc.MetaData.Statistics
			var lo, hi []byte
			switch c {
			case 0:
				mn, mx := part[0].S, part[0].S
				for _, r := range part {
					mn, mx = min(mn, r.S), max(mx, r.S)
				}
				if len(mn) <= MaxStatisticsBytes && len(mx) <= MaxStatisticsBytes && g != 3 {
					lo, hi = []byte(mn), []byte(mx)
				}
			case 1, 2:
				get := func(r row) int64 { return map[bool]int64{true: r.I, false: r.TS}[c == 1] }
				mn, mx := get(part[0]), get(part[0])
				for _, r := range part {
					mn, mx = min(mn, get(r)), max(mx, get(r))
				}
				lo, hi = binary.LittleEndian.AppendUint64(nil, uint64(mn)), binary.LittleEndian.AppendUint64(nil, uint64(mx))
			case 3:
				mn, mx, seen := math.Inf(1), math.Inf(-1), false
				for _, r := range part {
					if !math.IsNaN(r.D) {
						mn, mx, seen = math.Min(mn, r.D), math.Max(mx, r.D), true
					}
				}
				if mn == 0 {
					mn = math.Copysign(0, -1)
				}
				if mx == 0 {
					mx = 0
				}
				if seen {
					lo = binary.LittleEndian.AppendUint64(nil, math.Float64bits(mn))
					hi = binary.LittleEndian.AppendUint64(nil, math.Float64bits(mx))
				}
			}
			where := fmt.Sprintf("row group %d column %d", g, c)
			if !bytes.Equal(st.MinValue, lo) || !bytes.Equal(st.MaxValue, hi) {
				t.Errorf("%s: min %x max %x, want %x %x", where, st.MinValue, st.MaxValue, lo, hi)
			}
			if st.NullCount != 0 {
				t.Errorf("%s: %d nulls", where, st.NullCount)
			}
		}
	}
}

func TestWriterEmpty(t *testing.T) {
	t.Parallel()
	data := writeRows(t, nil, Options{})
	f, got := readGo(t, data)
	if len(got) != 0 || len(f.RowGroups()) != 0 {
		t.Errorf("an empty file reads %d rows in %d row groups", len(got), len(f.RowGroups()))
	}
	var names []string
	for _, c := range f.Schema().Fields() {
		names = append(names, c.Name())
	}
	if strings.Join(names, ",") != "s,i,ts,d" {
		t.Errorf("columns %q", names)
	}
	pa := parquettest.Read(t, data)
	if pa.Rows != 0 || len(pa.Columns) != 4 {
		t.Errorf("pyarrow reads %d rows, %d columns", pa.Rows, len(pa.Columns))
	}
}

// TestWriterPyarrow reads the varied rows with pyarrow, a reader of its
// own: the schema's types, every value, and the footer's statistics.
func TestWriterPyarrow(t *testing.T) {
	t.Parallel()
	const group = 4000
	want := variedRows(3*group + 17)
	data := writeRows(t, want, Options{RowGroupRows: group, PageRows: 1000, CreatedBy: "memdoctor test"})
	f := parquettest.Read(t, data)
	if f.Rows != int64(len(want)) || f.RowGroups != 4 || f.CreatedBy != "memdoctor test" {
		t.Errorf("pyarrow: %d rows in %d row groups created by %q, want %d in 4 created by memdoctor test", f.Rows, f.RowGroups, f.CreatedBy, len(want))
	}
	types := []string{
		"s BYTE_ARRAY String string",
		"i INT64 None int64",
		"ts INT64 Timestamp(isAdjustedToUTC=true, timeUnit=milliseconds, is_from_converted_type=false, force_set_converted_type=false) timestamp[ms, tz=UTC]",
		"d DOUBLE None double",
	}
	if len(f.Columns) != len(types) {
		t.Fatalf("pyarrow reads %d columns", len(f.Columns))
	}
	for i, c := range f.Columns {
		if got := strings.Join([]string{c.Name, c.Physical, c.Logical, c.Arrow}, " "); got != types[i] {
			t.Errorf("column %d: pyarrow reads %q, want %q", i, got, types[i])
		}
	}
	got := make([]row, len(f.Columns[0].Strings))
	for i := range got {
		got[i] = row{S: f.Columns[0].Strings[i], I: f.Columns[1].Ints[i], TS: f.Columns[2].Ints[i], D: math.Float64frombits(f.Columns[3].Bits[i])}
	}
	sameRows(t, got, want)
	for g, chunks := range f.Chunks {
		part := want[g*group : min(len(want), (g+1)*group)]
		mn, mx := part[0], part[0]
		for _, r := range part {
			mn.S, mx.S = min(mn.S, r.S), max(mx.S, r.S)
			mn.I, mx.I = min(mn.I, r.I), max(mx.I, r.I)
		}
		wantStats := []wantChunk{{"s", true, mn.S, mx.S}, {"i", true, strconv.FormatInt(mn.I, 10), strconv.FormatInt(mx.I, 10)}}
		for c, w := range wantStats {
			ch := chunks[c]
			if ch.Column != w.name || ch.HasMinMax != w.has || ch.Min != w.min || ch.Max != w.max || ch.Nulls != 0 {
				t.Errorf("row group %d: pyarrow reads statistics %+v, want %+v", g, ch, w)
			}
		}
		for _, ch := range chunks[2:] {
			if !ch.HasMinMax {
				t.Errorf("row group %d column %s: no min and max", g, ch.Column)
			}
		}
	}
}

// wantChunk is the statistics TestWriterPyarrow expects of a column chunk.
type wantChunk struct {
	name     string
	has      bool
	min, max string
}

func TestWriterErrors(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if _, err := NewWriter(&b, nil, Options{}); err == nil {
		t.Error("no columns: no error")
	}
	if _, err := NewWriter(&b, []Column{{"a", String}, {"a", Double}}, Options{}); err == nil {
		t.Error("a repeated name: no error")
	}
	if _, err := NewWriter(&b, []Column{{"a", Type(9)}}, Options{}); err == nil {
		t.Error("an unknown type: no error")
	}
	pw, err := NewWriter(&b, testColumns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pw.String(0, "a")
	pw.Int64(1, 1)
	pw.Int64(2, 1)
	if err := pw.EndRow(); err == nil || !strings.Contains(err.Error(), "column d") {
		t.Errorf("a row without its double: %v", err)
	}
	if err := pw.Close(); err == nil {
		t.Error("Close after a failed row: no error")
	}

	pw, _ = NewWriter(&b, testColumns, Options{})
	pw.Double(0, 1)
	if err := pw.EndRow(); err == nil || !strings.Contains(err.Error(), "column s is not") {
		t.Errorf("a double in a string column: %v", err)
	}

	pw, _ = NewWriter(&b, testColumns, Options{})
	pw.String(0, "a")
	if err := pw.Close(); err == nil || !strings.Contains(err.Error(), "inside a row") {
		t.Errorf("Close inside a row: %v", err)
	}
}

// failAfter fails every write once n bytes are written: a full disk.
type failAfter struct{ n int }

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errors.New("no space left on device")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriterFullDisk(t *testing.T) {
	t.Parallel()
	rows := variedRows(10_000)
	full := writeRows(t, rows, Options{RowGroupRows: 2000})
	for _, room := range []int{0, 3, 100, len(full) / 2, len(full) - 1} {
		pw, err := NewWriter(&failAfter{room}, testColumns, Options{RowGroupRows: 2000})
		for _, r := range rows {
			if err != nil {
				break
			}
			pw.String(0, r.S)
			pw.Int64(1, r.I)
			pw.Int64(2, r.TS)
			pw.Double(3, r.D)
			err = pw.EndRow()
		}
		if err == nil {
			err = pw.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "no space") {
			t.Errorf("room for %d of %d bytes: %v", room, len(full), err)
		}
	}
}
