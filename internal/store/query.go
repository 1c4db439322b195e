package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store/xor"
)

// Query selects series.
type Query struct {
	// Instance names the instance; "" means the store's only instance
	// (Select fails when there are several; the exports take them all).
	Instance string
	// Names lists metric names to read; empty means all.
	Names []string
	// Match are label name, value pairs every series must have.
	Match []string
	// From and To bound the samples, both included. A zero From means
	// from the first sample, a zero To up to the last.
	From time.Time
	To   time.Time
	// Step > 0 aggregates raw samples into steps aligned on From:
	// Points[i] is the last raw sample of step i (its own timestamp), Max,
	// Min, Mean the step's aggregates. 0 returns raw samples. Steps
	// without samples are left out.
	Step time.Duration
	// Keep, when not nil, says per series name which step aggregates a
	// stepped read keeps (a name it lacks keeps none: Points only, a
	// quarter of the memory of the four slices); nil keeps all three.
	Keep map[string]sample.Aggregates
}

// keeps returns the step aggregates q keeps for series name.
func (q Query) keeps(name string) sample.Aggregates {
	if q.Keep == nil {
		return sample.KeepAll
	}
	return q.Keep[name]
}

// bounds returns the query's time range in milliseconds.
func (q Query) bounds() (from, to int64) {
	from = q.From.UnixMilli()
	to = int64(math.MaxInt64)
	if !q.To.IsZero() {
		to = q.To.UnixMilli()
	}
	return from, to
}

// Select reads series: every series of the instance with at least one
// sample in [From, To], sorted by name then labels. Chunks are decoded one
// at a time, so a stepped read of months holds only its steps in memory.
func (s *Store) Select(q Query) ([]*sample.Series, error) {
	var out []*sample.Series
	err := s.SelectEach(q, func(ser *sample.Series) error {
		out = append(out, ser)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SelectEach reads the series Select reads, in the same order, and hands
// each to fn as soon as it is read: a caller that keeps only part of a
// series never holds more than one whole. An error from fn ends the read.
func (s *Store) SelectEach(q Query, fn func(*sample.Series) error) error {
	sn, err := s.queryTx(q, false)
	if err != nil {
		return err
	}
	defer sn.close()
	from, to := q.bounds()
	for i := range sn.series {
		sel := &sn.series[i]
		b := newBuilder(sel, from, to, q.Step.Milliseconds(), q.keeps(sel.name))
		if err := sn.samples(sel, from, to, b.add); err != nil {
			return err
		}
		if ser := b.finish(); ser != nil {
			if err := fn(ser); err != nil {
				return err
			}
		}
	}
	return nil
}

// selected is one series a queryTx reads.
type selected struct {
	id       int64
	instance string
	name     string
	labels   sample.Labels
	text     string // canonical labels text
	head     []byte // copy of the head chunk, nil when the head has none
}

// queryTx is a read transaction with the series of one query resolved.
type queryTx struct {
	s      *Store
	tx     *sql.Tx
	series []selected
	stmt   *sql.Stmt
	it     xor.Iterator
}

// queryTx opens a read transaction, resolves q's series and copies their
// head data. all: an empty q.Instance means every instance (exports).
func (s *Store) queryTx(q Query, all bool) (*queryTx, error) {
	if len(q.Match)%2 != 0 {
		return nil, fmt.Errorf("store %s: select: match %q: want name, value pairs", s.path, q.Match)
	}
	if q.Step < 0 {
		return nil, fmt.Errorf("store %s: select: negative step %v", s.path, q.Step)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen("select"); err != nil {
		return nil, err
	}
	tx, err := s.rdb.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, s.wrap("select", err)
	}
	sn := &queryTx{s: s, tx: tx}
	if err := sn.resolve(q, all); err != nil {
		sn.close()
		return nil, err
	}
	return sn, nil
}

func (sn *queryTx) close() {
	_ = sn.tx.Rollback() // read-only: nothing to keep
}

func (sn *queryTx) resolve(q Query, all bool) error {
	s := sn.s
	ctx := context.Background()
	tx := rtx{s, sn.tx}
	heads, err := s.syncHeads(tx, q.Instance)
	if err != nil {
		return s.wrap("select: load head", err)
	}
	if q.Instance == "" && !all && len(heads) > 1 {
		names := make([]string, 0, len(heads))
		for n := range heads {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("store %s: select: the store holds %d instances (%s): name one", s.path, len(names), strings.Join(names, ", "))
	}
	query := "SELECT id, instance, name, labels FROM series"
	var where []string
	var args []any
	if q.Instance != "" {
		where = append(where, "instance = ?")
		args = append(args, q.Instance)
	}
	// Of one instance, many names are picked out of its rows here: an IN
	// list of the tens of names a diagnosis reads is an index seek each,
	// about 100 µs a query where the instance's rows take 20 µs
	// (10,000 instances of one series).
	var names map[string]bool
	if len(q.Names) > maxInNames && q.Instance != "" {
		names = make(map[string]bool, len(q.Names))
		for _, n := range q.Names {
			names[n] = true
		}
	} else if len(q.Names) > 0 {
		where = append(where, "name IN ("+strings.TrimSuffix(strings.Repeat("?,", len(q.Names)), ",")+")")
		for _, n := range q.Names {
			args = append(args, n)
		}
	}
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY name, instance, labels"
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return s.wrap("select", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	from, to := q.bounds()
	for rows.Next() {
		var sel selected
		if err := rows.Scan(&sel.id, &sel.instance, &sel.name, &sel.text); err != nil {
			return s.wrap("select", err)
		}
		if names != nil && !names[sel.name] {
			continue
		}
		if sel.labels, err = sample.ParseLabels(sel.text); err != nil {
			return corruptf(s.path, fmt.Sprintf("series %d has damaged labels %q (%v); %s", sel.id, sel.text, err, recoverHint(s.path)))
		}
		if !matches(sel.labels, q.Match) {
			continue
		}
		if h := heads[sel.instance]; h != nil {
			if hs := h.series[sel.id]; hs != nil && hs.n > 0 && hs.maxT >= from && hs.minT <= to {
				sel.head = append([]byte(nil), hs.chunk.Bytes()...)
			}
		}
		sn.series = append(sn.series, sel)
	}
	if err := rows.Err(); err != nil {
		return s.wrap("select", err)
	}
	return nil
}

// maxInNames is the most names a query of one instance asks SQLite for;
// of more, the instance's series are read and the names picked out.
const maxInNames = 4

func matches(ls sample.Labels, match []string) bool {
	for j := 0; j+1 < len(match); j += 2 {
		if ls.Get(match[j]) != match[j+1] {
			return false
		}
	}
	return true
}

// samples calls fn for every sample of sel in [from, to], in time order:
// the stored chunks, then the head.
func (sn *queryTx) samples(sel *selected, from, to int64, fn func(t int64, v float64)) error {
	s := sn.s
	if sn.stmt == nil {
		// A chunk spans less than the chunk range, so one that reaches from
		// starts after from - range: the bound keeps the index seek short.
		var err error
		sn.stmt, err = rtx{s, sn.tx}.stmt(context.Background(), `SELECT min_t, max_t, num_samples, data, `+s.crcColumn()+` FROM chunks
			WHERE series_id = ? AND min_t <= ? AND min_t > ? AND max_t >= ? ORDER BY min_t`)
		if err != nil {
			return s.wrap("select", err)
		}
	}
	lo := from - s.rangeMS
	if lo > from { // overflow
		lo = math.MinInt64
	}
	rows, err := sn.stmt.Query(sel.id, to, lo, from)
	if err != nil {
		return s.wrap("select", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	for rows.Next() {
		var minT, maxT, n int64
		var data sql.RawBytes
		var crc sql.NullInt64
		if err := rows.Scan(&minT, &maxT, &n, &data, &crc); err != nil {
			return s.wrap("select", err)
		}
		if err := sn.chunkSamples(sel.id, sel.name, sel.text, minT, maxT, n, data, crc, from, to, fn); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap("select", err)
	}
	if sel.head != nil {
		if err := sn.decode(sel.head, from, to, fn); err != nil {
			return fmt.Errorf("store %s: head of series %d: %w", s.path, sel.id, err)
		}
	}
	return nil
}

// decode calls fn for the samples of an XOR chunk in [from, to].
func (sn *queryTx) decode(data []byte, from, to int64, fn func(t int64, v float64)) error {
	sn.it.Reset(data)
	for sn.it.Next() {
		t, v := sn.it.At()
		if t < from {
			continue
		}
		if t > to {
			return nil
		}
		fn(t, v)
	}
	return sn.it.Err()
}

// chunkSamples calls fn for the samples of a stored chunk in [from, to].
// The chunk's checksum must match (a chunk without one, in a format 1 store
// read without upgrading it, is checked for structure only), and its data
// hold n samples in increasing time order within [minT, maxT]. A damaged
// chunk is an error naming the series and the time range whose samples
// are lost, or, with SkipDamaged, left out.
func (sn *queryTx) chunkSamples(id int64, name, text string, minT, maxT, n int64, data []byte, crc sql.NullInt64, from, to int64, fn func(t int64, v float64)) error {
	var why string
	if crc.Valid && chunkCRC(id, minT, maxT, n, data) != crc.Int64 {
		why = "checksum mismatch"
	} else {
		why = sn.walkChunk(minT, maxT, n, data, from, to, fn)
	}
	if why == "" {
		return nil
	}
	return sn.s.damaged(Damage{SeriesID: id, Series: name + text, MinT: minT, From: time.UnixMilli(minT), To: time.UnixMilli(maxT), Samples: n, Why: why})
}

// walkChunk calls fn (when not nil) for the samples of an XOR chunk in
// [from, to] and says what is wrong with the chunk, or "": a count other
// than n, samples out of order or out of [minT, maxT], undecodable data.
// With fn it stops after to; without it reads the whole chunk.
func (sn *queryTx) walkChunk(minT, maxT, n int64, data []byte, from, to int64, fn func(t int64, v float64)) string {
	if len(data) < 2 || int64(binary.BigEndian.Uint16(data)) != n {
		return "sample count"
	}
	sn.it.Reset(data)
	prev := minT - 1
	for sn.it.Next() {
		t, v := sn.it.At()
		if t <= prev || t > maxT {
			return "samples out of the chunk's time range or order"
		}
		prev = t
		if fn == nil {
			continue
		}
		if t > to {
			return ""
		}
		if t >= from {
			fn(t, v)
		}
	}
	if err := sn.it.Err(); err != nil {
		return err.Error()
	}
	return ""
}

// builder turns a series' samples into a sample.Series, raw or stepped.
type builder struct {
	ser        *sample.Series
	from, step int64
	keep       sample.Aggregates
	// the open step
	open   bool
	bucket int64
	n      int
	sum    float64
	mx, mn float64
	last   sample.Point
}

// newBuilder starts a series; with a step and a bounded range it sizes the
// step slices up front (only the aggregates in keep; the others stay nil).
func newBuilder(sel *selected, from, to, step int64, keep sample.Aggregates) *builder {
	b := &builder{ser: &sample.Series{Name: sel.name, Labels: sel.labels}, from: from, step: step, keep: keep}
	if step > 0 && to != math.MaxInt64 && to >= from {
		if n := (to-from)/step + 1; n <= 1<<16 {
			b.ser.Points = make([]sample.Point, 0, n)
			if keep&sample.KeepMax != 0 {
				b.ser.Max = make([]float64, 0, n)
			}
			if keep&sample.KeepMin != 0 {
				b.ser.Min = make([]float64, 0, n)
			}
			if keep&sample.KeepMean != 0 {
				b.ser.Mean = make([]float64, 0, n)
			}
		}
	}
	return b
}

func (b *builder) add(t int64, v float64) {
	if b.step <= 0 {
		b.ser.Points = append(b.ser.Points, sample.Point{T: t, V: v})
		return
	}
	k := (t - b.from) / b.step
	if !b.open || k != b.bucket {
		b.flush()
		b.open, b.bucket, b.n, b.sum, b.mx, b.mn = true, k, 0, 0, v, v
	}
	b.n++
	b.sum += v
	b.mx, b.mn = math.Max(b.mx, v), math.Min(b.mn, v) // NaN wins; -0 < +0
	b.last = sample.Point{T: t, V: v}
}

func (b *builder) flush() {
	if !b.open {
		return
	}
	b.ser.Points = append(b.ser.Points, b.last)
	if b.keep&sample.KeepMax != 0 {
		b.ser.Max = append(b.ser.Max, b.mx)
	}
	if b.keep&sample.KeepMin != 0 {
		b.ser.Min = append(b.ser.Min, b.mn)
	}
	if b.keep&sample.KeepMean != 0 {
		b.ser.Mean = append(b.ser.Mean, b.sum/float64(b.n))
	}
	b.open = false
}

// finish returns the series, or nil when it had no sample.
func (b *builder) finish() *sample.Series {
	b.flush()
	if len(b.ser.Points) == 0 {
		return nil
	}
	return b.ser
}
