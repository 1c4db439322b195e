package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Append stores snapshots of one instance, in one transaction: when it
// returns nil the samples survive a crash or kill -9. Snapshots must be in
// time order per instance; a snapshot not newer than the newest stored one
// is rejected with ErrOutOfOrder, and then nothing of the call is stored.
// The snapshots' own Instance fields are ignored. A series given twice in
// one snapshot keeps its first value.
//
// Each snapshot costs one head row; when a snapshot's time passes the chunk
// range of the head, the head is first cut into one chunk per series.
// Snapshots of a range that a later snapshot of the same call closes go
// straight into chunks without head rows.
func (s *Store) Append(instance string, snapshots ...*sample.Snapshot) error {
	err := s.AppendBatch([]Batch{{Instance: instance, Snapshots: snapshots}})
	var be *BatchError
	if errors.As(err, &be) {
		return be.Err
	}
	return err
}

// Batch is snapshots of one instance for AppendBatch.
type Batch struct {
	Instance  string
	Snapshots []*sample.Snapshot
}

// BatchError is AppendBatch's error about one of its batches.
type BatchError struct {
	Index int // of the batch
	Err   error
}

func (e *BatchError) Error() string { return e.Err.Error() }
func (e *BatchError) Unwrap() error { return e.Err }

// AppendBatch stores the snapshots of several instances in one transaction,
// as Append would one batch after another: all of them or, on error,
// nothing. An instance may come in several batches, in time order. One
// transaction (one fsync) for a whole fleet is what keeps ingesting a file
// of many instances linear and fast; the recorder appends one instance.
// An error about one batch is a *BatchError.
func (s *Store) AppendBatch(batches []Batch) error {
	for i, b := range batches {
		if b.Instance == "" {
			return &BatchError{i, fmt.Errorf("store %s: append: empty instance name", s.path)}
		}
	}
	if !slices.ContainsFunc(batches, func(b Batch) bool { return len(b.Snapshots) > 0 }) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkWritable("append"); err != nil {
		return err
	}
	tx, err := s.wdb.Begin()
	if err != nil {
		return s.wrap("append", err)
	}
	a := appender{s: s, tx: tx, q: &stmtTx{tx: tx}, ctx: context.Background()}
	defer a.close()
	if err = a.checkGen(); err != nil {
		err = s.wrap("append: load head", err)
	}
	touched := 0
	for i, b := range batches {
		if err != nil {
			break
		}
		touched = i + 1
		if len(b.Snapshots) == 0 {
			continue
		}
		if err = a.run(b.Instance, b.Snapshots); err != nil {
			err = &BatchError{i, err}
		}
	}
	if err == nil {
		err = s.wrap("append: commit", tx.Commit())
	}
	if err != nil {
		_ = tx.Rollback()
		for _, b := range batches[:touched] {
			delete(s.heads, b.Instance) // the mirror may hold what was rolled back
		}
		return err
	}
	if batches[0].Instance != batches[len(batches)-1].Instance || len(batches) > 2 {
		// A bulk ingest of many instances: each is appended once or twice,
		// so the writer's caches would only hold memory (100 000
		// instances: ~40 MB). They are rebuilt when needed.
		for _, b := range batches {
			if h := s.heads[b.Instance]; h != nil {
				h.keys, h.layout = nil, nil
			}
		}
	}
	return nil
}

// appender is the state of one Append.
type appender struct {
	s   *Store
	tx  *sql.Tx
	q   *stmtTx // tx, each statement prepared once
	h   *instHead
	ctx context.Context

	insChunk, insHead *sql.Stmt
	ids               []int64
	row               []rowSample
	buf               []byte
}

// close releases the prepared statements.
func (a *appender) close() {
	for _, st := range []*sql.Stmt{a.insChunk, a.insHead} {
		if st != nil {
			_ = st.Close() // a statement of a finished transaction
		}
	}
	a.q.close()
}

// stmtTx is a transaction that prepares each query text once: an
// AppendBatch of many instances runs the same few queries for each.
type stmtTx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (q *stmtTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := q.stmts[query]; ok {
		return st, nil
	}
	st, err := q.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if q.stmts == nil {
		q.stmts = map[string]*sql.Stmt{}
	}
	q.stmts[query] = st
	return st, nil
}

func (q *stmtTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := q.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (q *stmtTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := q.stmt(ctx, query)
	if err != nil {
		return q.tx.QueryRowContext(ctx, query, args...) // reports the same error through Scan
	}
	return st.QueryRowContext(ctx, args...)
}

func (q *stmtTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := q.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (q *stmtTx) close() {
	for _, st := range q.stmts {
		_ = st.Close() // a statement of a finished transaction
	}
}

// checkGen drops the cached series ids when another process deleted
// series.
func (a *appender) checkGen() error {
	return a.s.checkGen(a.q)
}

func (a *appender) run(instance string, snapshots []*sample.Snapshot) error {
	s := a.s
	h, err := s.syncHeadOf(a.q, instance)
	if err != nil {
		return s.wrap("append: load head", err)
	}
	a.h = h
	if !h.known {
		if _, err := a.q.ExecContext(a.ctx, "INSERT INTO instances (name) VALUES (?)", instance); err != nil {
			return s.wrap("append", err)
		}
		h.known = true
		s.heads[instance] = h
	}
	last := snapshots[len(snapshots)-1]
	if last == nil {
		return fmt.Errorf("store %s: append: nil snapshot", s.path)
	}
	lastWindow := floorDiv(last.Time.UnixMilli(), s.rangeMS)
	newest, have := h.newest()
	for _, sc := range snapshots {
		if sc == nil {
			return fmt.Errorf("store %s: append: nil snapshot", s.path)
		}
		t := sc.Time.UnixMilli()
		if have && t <= newest {
			return fmt.Errorf("store %s: append to %q: snapshot at %s is not after the newest stored sample at %s: %w",
				s.path, instance, fmtMS(t), fmtMS(newest), ErrOutOfOrder)
		}
		if len(sc.Metrics) == 0 {
			continue
		}
		newest, have = t, true
		w := floorDiv(t, s.rangeMS)
		if !h.empty() && (w != h.window || h.snapshots >= maxChunkSamples) {
			if err := a.cut(); err != nil {
				return err
			}
		}
		if h.empty() {
			h.window = w
		}
		if err := a.add(t, sc, w == lastWindow); err != nil {
			return err
		}
	}
	return nil
}

// add puts one snapshot into the head, and into a head row when withRow.
func (a *appender) add(t int64, sc *sample.Snapshot, withRow bool) error {
	h := a.h
	if err := a.resolve(sc); err != nil {
		return err
	}
	a.row = a.row[:0]
	for i, m := range sc.Metrics {
		hs := h.get(a.ids[i])
		if hs.add(t, m.Value) {
			a.row = append(a.row, rowSample{hs, math.Float64bits(m.Value)})
		}
	}
	h.snapshots++
	if !withRow {
		return nil
	}
	if !slices.IsSortedFunc(a.row, func(x, y rowSample) int { return cmpInt(x.hs.id, y.hs.id) }) {
		slices.SortFunc(a.row, func(x, y rowSample) int { return cmpInt(x.hs.id, y.hs.id) })
	}
	a.buf = h.encodeRow(a.buf[:0], a.row)
	if a.insHead == nil {
		var err error
		if a.insHead, err = a.tx.PrepareContext(a.ctx, "INSERT INTO head (instance, t, data) VALUES (?, ?, ?)"); err != nil {
			return a.s.wrap("append", err)
		}
	}
	if _, err := a.insHead.ExecContext(a.ctx, h.name, t, a.buf); err != nil {
		return a.s.wrap("append: head row", err)
	}
	if h.rows == 0 {
		h.first = t
	}
	h.rows++
	h.last = t
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// resolve sets a.ids to the series id of each metric of sc, creating
// series as needed.
func (a *appender) resolve(sc *sample.Snapshot) error {
	h := a.h
	a.ids = a.ids[:0]
	changed := len(sc.Metrics) != len(h.layout)
	for i, m := range sc.Metrics {
		if i < len(h.layout) && h.layout[i].name == m.Name && slices.Equal(h.layout[i].labels, m.Labels) {
			a.ids = append(a.ids, h.layout[i].id)
			continue
		}
		id, err := a.lookup(m)
		if err != nil {
			return err
		}
		a.ids = append(a.ids, id)
		changed = true
	}
	if changed {
		h.layout = h.layout[:0]
		for i, m := range sc.Metrics {
			// Cloned: a caller reusing a label slice must not change what it matches.
			h.layout = append(h.layout, layoutEntry{m.Name, slices.Clone(m.Labels), a.ids[i]})
		}
	}
	return nil
}

// lookup returns the id of m's series, creating it.
func (a *appender) lookup(m sample.Metric) (int64, error) {
	h := a.h
	if h.keys == nil {
		if err := a.loadKeys(); err != nil {
			return 0, err
		}
	}
	if err := checkName(m.Name); err != nil {
		return 0, fmt.Errorf("store %s: append: %w", a.s.path, err)
	}
	lt, err := labelsText(m.Labels)
	if err != nil {
		return 0, fmt.Errorf("store %s: append: series %s: %w", a.s.path, m.Name, err)
	}
	key := m.Name + lt
	if id, ok := h.keys[key]; ok {
		return id, nil
	}
	var id int64
	err = a.q.QueryRowContext(a.ctx, `INSERT INTO series (instance, name, labels) VALUES (?, ?, ?)
		ON CONFLICT (instance, name, labels) DO UPDATE SET instance = excluded.instance RETURNING id`,
		h.name, m.Name, lt).Scan(&id)
	if err != nil {
		return 0, a.s.wrap("append: new series", err)
	}
	h.keys[key] = id
	return id, nil
}

func (a *appender) loadKeys() error {
	h := a.h
	rows, err := a.q.QueryContext(a.ctx, "SELECT id, name, labels FROM series WHERE instance = ?", h.name)
	if err != nil {
		return a.s.wrap("append: read series", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	h.keys = map[string]int64{}
	for rows.Next() {
		var id int64
		var name, labels string
		if err := rows.Scan(&id, &name, &labels); err != nil {
			return a.s.wrap("append: read series", err)
		}
		h.keys[name+labels] = id
	}
	if err := rows.Err(); err != nil {
		h.keys = nil
		return a.s.wrap("append: read series", err)
	}
	return nil
}

// cut writes the head's samples as one chunk per series, deletes the head
// rows and starts an empty head.
func (a *appender) cut() error {
	h := a.h
	if a.insChunk == nil {
		var err error
		a.insChunk, err = a.tx.PrepareContext(a.ctx,
			"INSERT INTO chunks (series_id, min_t, max_t, num_samples, data, crc) VALUES (?, ?, ?, ?, ?, ?)")
		if err != nil {
			return a.s.wrap("append: cut", err)
		}
	}
	ids := make([]int64, 0, len(h.series))
	for id, hs := range h.series {
		if hs.n > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	mn, mx := int64(math.MaxInt64), int64(math.MinInt64)
	for _, id := range ids {
		hs := h.series[id]
		data := hs.chunk.Bytes()
		if _, err := a.insChunk.ExecContext(a.ctx, id, hs.minT, hs.maxT, hs.n, data, chunkCRC(id, hs.minT, hs.maxT, int64(hs.n), data)); err != nil {
			return a.s.wrap("append: cut", err)
		}
		mn, mx = min(mn, hs.minT), max(mx, hs.maxT)
	}
	if h.rows > 0 {
		if _, err := a.q.ExecContext(a.ctx, "DELETE FROM head WHERE instance = ?", h.name); err != nil {
			return a.s.wrap("append: cut", err)
		}
	}
	if len(ids) > 0 {
		if h.hasChunks {
			mn, mx = min(mn, h.chunkMin), max(mx, h.chunkMax)
		}
		if _, err := a.q.ExecContext(a.ctx, "UPDATE instances SET min_t = ?, max_t = ? WHERE name = ?", mn, mx, h.name); err != nil {
			return a.s.wrap("append: cut", err)
		}
		h.hasChunks, h.chunkMin, h.chunkMax = true, mn, mx
	}
	h.resetSamples()
	return nil
}

// fmtMS renders a millisecond timestamp for messages.
func fmtMS(t int64) string {
	return time.UnixMilli(t).UTC().Format("2006-01-02T15:04:05.000Z")
}
