package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// DeleteBefore removes every chunk that ends before t (retention) and
// returns how many. Head samples (the newest chunk range) are kept. Series
// left without samples are removed, and so are instances. When more than a
// quarter of the file is free afterwards, the free pages are given back to
// the file system (incremental vacuum).
func (s *Store) DeleteBefore(t time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkWritable("delete before"); err != nil {
		return 0, err
	}
	ctx := context.Background()
	tx, err := s.wdb.Begin()
	if err != nil {
		return 0, s.wrap("delete before", err)
	}
	n, err := s.deleteBefore(ctx, tx, t.UnixMilli())
	if err == nil {
		err = s.wrap("delete before: commit", tx.Commit())
	}
	if err != nil {
		_ = tx.Rollback()
		s.heads = map[string]*instHead{} // re-read whole next time
		return 0, err
	}
	if err := s.vacuum(ctx); err != nil {
		return n, err
	}
	return n, nil
}

func (s *Store) deleteBefore(ctx context.Context, tx *sql.Tx, tms int64) (int, error) {
	heads, err := s.syncHeads(tx, "")
	if err != nil {
		return 0, s.wrap("delete before: load head", err)
	}
	// Through the (series_id, min_t) index, series by series (CROSS JOIN
	// fixes that order; the planner would rather scan every chunk row): a
	// chunk that ends before t also starts before it.
	res, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE rowid IN (
		SELECT c.rowid FROM series s CROSS JOIN chunks c ON c.series_id = s.id AND c.min_t < ?1 WHERE c.max_t < ?1)`, tms)
	if err != nil {
		return 0, s.wrap("delete before", err)
	}
	n, _ := res.RowsAffected()
	if n == 0 {
		return 0, nil
	}
	// Series without chunks and without head samples.
	rows, err := tx.QueryContext(ctx, `SELECT id, instance FROM series
		WHERE NOT EXISTS (SELECT 1 FROM chunks WHERE series_id = series.id)`)
	if err != nil {
		return 0, s.wrap("delete before", err)
	}
	var orphans []int64
	for rows.Next() {
		var id int64
		var inst string
		if err := rows.Scan(&id, &inst); err != nil {
			_ = rows.Close()
			return 0, s.wrap("delete before", err)
		}
		if h := heads[inst]; h != nil {
			if hs := h.series[id]; hs != nil && hs.n > 0 {
				continue
			}
		}
		orphans = append(orphans, id)
	}
	_ = rows.Close()
	if err := rows.Err(); err != nil {
		return 0, s.wrap("delete before", err)
	}
	for _, id := range orphans {
		if _, err := tx.ExecContext(ctx, "DELETE FROM series WHERE id = ?", id); err != nil {
			return 0, s.wrap("delete before", err)
		}
	}
	if len(orphans) > 0 {
		s.gen++
		if _, err := tx.ExecContext(ctx, "UPDATE meta SET value = ? WHERE key = 'series_gen'", strconv.FormatInt(s.gen, 10)); err != nil {
			return 0, s.wrap("delete before", err)
		}
		for _, h := range s.heads {
			h.keys, h.layout = nil, nil
		}
	}
	// The instances' chunk ranges; instances left with nothing go.
	for name, h := range heads {
		var mn sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT min((SELECT min(min_t) FROM chunks WHERE series_id = s.id))
			FROM series s WHERE s.instance = ?`, name).Scan(&mn)
		if err != nil {
			return 0, s.wrap("delete before", err)
		}
		switch {
		case mn.Valid:
			_, err = tx.ExecContext(ctx, "UPDATE instances SET min_t = ? WHERE name = ?", mn.Int64, name)
			h.chunkMin = mn.Int64
		case h.empty():
			_, err = tx.ExecContext(ctx, "DELETE FROM instances WHERE name = ?", name)
			delete(s.heads, name)
		default:
			_, err = tx.ExecContext(ctx, "UPDATE instances SET min_t = NULL, max_t = NULL WHERE name = ?", name)
			h.hasChunks = false
		}
		if err != nil {
			return 0, s.wrap("delete before", err)
		}
	}
	return int(n), nil
}

// vacuum gives free pages back to the file system when they are more than
// a quarter of the file.
func (s *Store) vacuum(ctx context.Context) error {
	var free, pages int64
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		return s.wrap("vacuum", err)
	}
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return s.wrap("vacuum", err)
	}
	if free*4 <= pages {
		return nil
	}
	if _, err := s.wdb.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
		return s.wrap("vacuum", err)
	}
	return nil
}

// Stats describes the store's size.
type Stats struct {
	// Series is the number of series, of every instance.
	Series int
	// Samples counts every stored sample, in chunks and in the head.
	Samples int64
	// FileBytes is the size on disk: the file and its WAL.
	FileBytes int64
	// ChunkBytes is the size of the encoded chunks alone.
	ChunkBytes int64
	// HeadSamples counts the samples in the head (not yet in chunks).
	HeadSamples int64
}

// Stats measures the store. It reads every chunk row, so it costs a scan
// of the file.
func (s *Store) Stats() (Stats, error) {
	var st Stats
	err := s.readTx("stats", "", func(q rtx, _ *instHead) error {
		tx := q.tx
		if err := tx.QueryRow("SELECT count(*) FROM series").Scan(&st.Series); err != nil {
			return s.wrap("stats", err)
		}
		if err := tx.QueryRow("SELECT coalesce(sum(num_samples), 0), coalesce(sum(length(data)), 0) FROM chunks").
			Scan(&st.Samples, &st.ChunkBytes); err != nil {
			return s.wrap("stats", err)
		}
		for _, h := range s.heads {
			for _, hs := range h.series {
				st.HeadSamples += int64(hs.n)
			}
		}
		st.Samples += st.HeadSamples
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	for _, p := range []string{s.path, s.path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return Stats{}, fmt.Errorf("store %s: stats: %w", s.path, err)
		}
		if err == nil {
			st.FileBytes += fi.Size()
		}
	}
	return st, nil
}

// Check verifies the whole file (SQLite's integrity_check, which reads
// every page) and every chunk's checksum. A damaged store is an error
// wrapping ErrCorrupt that says what to do; damaged chunks are named by
// series and time range.
func (s *Store) Check() error { return s.check("integrity_check") }

// QuickCheck is Check without the index-to-table cross checks: it still
// reads every page, so a damaged or zeroed page anywhere is found, at about
// the cost of reading the file once. Readers run it at open: a query reads
// only the series it needs and would miss damage elsewhere.
func (s *Store) QuickCheck() error { return s.check("quick_check") }

func (s *Store) check(pragma string) error {
	return s.readTx("check", "", func(q rtx, _ *instHead) error {
		tx := q.tx
		rows, err := tx.Query("PRAGMA " + pragma + "(20)")
		if err != nil {
			return s.wrap("check", err)
		}
		defer func() { _ = rows.Close() }() // rows.Err is checked
		var msgs []string
		for rows.Next() {
			var m string
			if err := rows.Scan(&m); err != nil {
				return s.wrap("check", err)
			}
			if m != "ok" {
				msgs = append(msgs, m)
			}
		}
		if err := rows.Err(); err != nil {
			return s.wrap("check", err)
		}
		if len(msgs) > 0 {
			return corruptf(s.path, "integrity check: "+strings.Join(msgs, "; ")+"; "+recoverHint(s.path))
		}
		// SQLite checks the pages, not what a value holds: every chunk's
		// checksum tells a flipped bit in its samples.
		list, n, err := s.checkChunks(tx)
		if err != nil {
			return err
		}
		if n > 0 {
			return s.damageError(list, n)
		}
		return nil
	})
}
