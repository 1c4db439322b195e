package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Instances lists the instances in the store, sorted.
func (s *Store) Instances() ([]string, error) {
	s.mu.Lock()
	if err := s.checkOpen("instances"); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Unlock()
	rows, err := s.rdb.Query("SELECT name FROM instances ORDER BY name")
	if err != nil {
		return nil, s.wrap("instances", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, s.wrap("instances", err)
		}
		out = append(out, n)
	}
	return out, s.wrap("instances", rows.Err())
}

// readTx runs fn in a read transaction holding s.mu, with the head of
// instance in sync.
func (s *Store) readTx(op, instance string, fn func(tx rtx, h *instHead) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return err
	}
	tx, err := s.rdb.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.wrap(op, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	q := rtx{s, tx}
	heads, err := s.syncHeads(q, instance)
	if err != nil {
		return s.wrap(op+": load head", err)
	}
	return fn(q, heads[instance])
}

// TimeRange returns the first and last sample time of an instance. An
// instance without samples is an error wrapping ErrNoData.
func (s *Store) TimeRange(instance string) (from, to time.Time, err error) {
	err = s.readTx("time range", instance, func(tx rtx, h *instHead) error {
		var mn, mx sql.NullInt64
		err := tx.QueryRowContext(context.Background(), "SELECT min_t, max_t FROM instances WHERE name = ?", instance).Scan(&mn, &mx)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s.wrap("time range", err)
		}
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		if mn.Valid && mx.Valid {
			lo, hi = mn.Int64, mx.Int64
		}
		if !h.empty() {
			n, _ := h.newest()
			lo, hi = min(lo, h.oldest()), max(hi, n)
		}
		if lo > hi {
			return fmt.Errorf("store %s: instance %q: %w", s.path, instance, ErrNoData)
		}
		from, to = time.UnixMilli(lo), time.UnixMilli(hi)
		return nil
	})
	return from, to, err
}

// Latest returns the newest value of every series of an instance at or
// before t (zero t: the newest), as one snapshot stamped with the newest
// sample time. Series whose newest sample is older than maxAge before that
// time are left out (vanished processes); maxAge 0 keeps every series.
// Metrics are sorted by name, then labels. An instance without samples at
// or before t is an error wrapping ErrNoData.
func (s *Store) Latest(instance string, t time.Time, maxAge time.Duration) (*sample.Snapshot, error) {
	at := int64(math.MaxInt64)
	if !t.IsZero() {
		at = t.UnixMilli()
	}
	type found struct {
		name, text string
		labels     sample.Labels
		t          int64
		v          float64
	}
	var got []found
	err := s.readTx("latest", instance, func(tx rtx, h *instHead) error {
		ctx := context.Background()
		rows, err := tx.QueryContext(ctx, "SELECT id, name, labels FROM series WHERE instance = ?", instance)
		if err != nil {
			return s.wrap("latest", err)
		}
		type ser struct {
			id         int64
			name, text string
		}
		var all []ser
		for rows.Next() {
			var x ser
			if err := rows.Scan(&x.id, &x.name, &x.text); err != nil {
				_ = rows.Close()
				return s.wrap("latest", err)
			}
			all = append(all, x)
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return s.wrap("latest", err)
		}
		sn := &queryTx{s: s, tx: tx.tx}
		stmt, err := tx.stmt(ctx, "SELECT min_t, max_t, num_samples, data, "+s.crcColumn()+" FROM chunks WHERE series_id = ? AND min_t <= ? ORDER BY min_t DESC LIMIT 1")
		if err != nil {
			return s.wrap("latest", err)
		}
		defer func() { _ = stmt.Close() }() // closed with the transaction anyway
		for _, x := range all {
			f := found{name: x.name, text: x.text, t: math.MinInt64}
			take := func(t int64, v float64) { f.t, f.v = t, v }
			if hs := h.series[x.id]; hs != nil && hs.n > 0 && hs.minT <= at {
				if err := sn.decode(hs.chunk.Bytes(), math.MinInt64, at, take); err != nil {
					return fmt.Errorf("store %s: head of series %d: %w", s.path, x.id, err)
				}
			} else {
				var minT, maxT, n int64
				var data []byte
				var crc sql.NullInt64
				err := stmt.QueryRow(x.id, at).Scan(&minT, &maxT, &n, &data, &crc)
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				if err != nil {
					return s.wrap("latest", err)
				}
				if err := sn.chunkSamples(x.id, x.name, x.text, minT, maxT, n, data, crc, math.MinInt64, at, take); err != nil {
					return err
				}
			}
			if f.t != math.MinInt64 {
				if f.labels, err = sample.ParseLabels(f.text); err != nil {
					return corruptf(s.path, fmt.Sprintf("series %d has damaged labels %q (%v); %s", x.id, f.text, err, recoverHint(s.path)))
				}
				got = append(got, f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(got) == 0 {
		when := ""
		if !t.IsZero() {
			when = " at or before " + fmtMS(at)
		}
		return nil, fmt.Errorf("store %s: latest of %q%s: %w", s.path, instance, when, ErrNoData)
	}
	newest := int64(math.MinInt64)
	for _, f := range got {
		newest = max(newest, f.t)
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].name != got[j].name {
			return got[i].name < got[j].name
		}
		return got[i].text < got[j].text
	})
	sc := &sample.Snapshot{Time: time.UnixMilli(newest), Instance: instance}
	for _, f := range got {
		if maxAge > 0 && f.t < newest-maxAge.Milliseconds() {
			continue
		}
		sc.AddMetric(sample.Metric{Name: f.name, Labels: f.labels, Value: f.v})
	}
	return sc, nil
}
