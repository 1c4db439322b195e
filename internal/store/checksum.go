package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// Every chunk row carries a CRC-32C of its series id, time range, sample
// count and data (format version 2). SQLite checks its pages' structure,
// not the bytes of a value: a bit flipped in a chunk's data decodes to
// other, plausible samples, and only the checksum tells.

// castagnoli builds the CRC-32C tables on first use: on amd64 that is
// 8 KiB of tables, which every command would otherwise build before main
// (TestInitAllocsWithinBudget).
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// chunkCRC is the checksum stored in a chunk row's crc column.
func chunkCRC(seriesID, minT, maxT, n int64, data []byte) int64 {
	var hdr [32]byte
	binary.BigEndian.PutUint64(hdr[0:], uint64(seriesID))
	binary.BigEndian.PutUint64(hdr[8:], uint64(minT))
	binary.BigEndian.PutUint64(hdr[16:], uint64(maxT))
	binary.BigEndian.PutUint64(hdr[24:], uint64(n))
	t := castagnoli()
	c := crc32.Update(0, t, hdr[:])
	return int64(crc32.Update(c, t, data))
}

// crcColumn is what a read selects as a chunk's checksum: the column, or
// NULL in a version 1 store opened read-only (not migrated: its chunks
// get the structural checks only).
func (s *Store) crcColumn() string {
	if s.hasCRC {
		return "crc"
	}
	return "NULL"
}

// hasColumn says whether table has column.
func hasColumn(ctx context.Context, conn *sql.Conn, table, column string) (bool, error) {
	rows, err := conn.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return false, err
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	found := false
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return false, err
		}
		found = found || name == column
	}
	return found, rows.Err()
}

// migrateV1 upgrades a format 1 store to 2 in one transaction: the chunks
// get their checksum column, filled for every chunk there is. A chunk
// damaged before is checksummed as it is; its structural checks still
// apply when it is read.
func (s *Store) migrateV1(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("open: upgrade to format 2", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var v string
	if err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'version'").Scan(&v); err != nil {
		return s.wrap("open: upgrade to format 2", err)
	}
	if v != "1" {
		return nil // upgraded meanwhile by another process
	}
	if _, err := tx.ExecContext(ctx, "ALTER TABLE chunks ADD COLUMN crc INTEGER"); err != nil {
		return s.wrap("open: upgrade to format 2", err)
	}
	upd, err := tx.PrepareContext(ctx, "UPDATE chunks SET crc = ? WHERE rowid = ?")
	if err != nil {
		return s.wrap("open: upgrade to format 2", err)
	}
	defer func() { _ = upd.Close() }() // closed with the transaction anyway
	// In rowid batches: a statement is never updating the rows it reads.
	last, batch := int64(-1<<63), make([][2]int64, 0, 1024)
	for {
		batch = batch[:0]
		rows, err := tx.QueryContext(ctx, "SELECT rowid, series_id, min_t, max_t, num_samples, data FROM chunks WHERE rowid > ? ORDER BY rowid LIMIT 1024", last)
		if err != nil {
			return s.wrap("open: upgrade to format 2", err)
		}
		for rows.Next() {
			var rowid, id, minT, maxT, n int64
			var data sql.RawBytes
			if err := rows.Scan(&rowid, &id, &minT, &maxT, &n, &data); err != nil {
				_ = rows.Close()
				return s.wrap("open: upgrade to format 2", err)
			}
			batch = append(batch, [2]int64{rowid, chunkCRC(id, minT, maxT, n, data)})
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return s.wrap("open: upgrade to format 2", err)
		}
		if len(batch) == 0 {
			break
		}
		for _, r := range batch {
			if _, err := upd.ExecContext(ctx, r[1], r[0]); err != nil {
				return s.wrap("open: upgrade to format 2", err)
			}
		}
		last = batch[len(batch)-1][0]
	}
	if _, err := tx.ExecContext(ctx, "UPDATE meta SET value = ? WHERE key = 'version'", strconv.Itoa(FormatVersion)); err != nil {
		return s.wrap("open: upgrade to format 2", err)
	}
	if err := tx.Commit(); err != nil {
		return s.wrap("open: upgrade to format 2", err)
	}
	return nil
}

// Damage is a stored chunk whose samples cannot be trusted: its checksum
// does not match, or its data does not decode to what its row says.
type Damage struct {
	SeriesID int64
	Series   string // name and labels, as in the store
	MinT     int64  // the chunk row's min_t
	From, To time.Time
	Samples  int64
	Why      string
}

func (d Damage) String() string {
	const layout = "2006-01-02 15:04:05 UTC"
	return fmt.Sprintf("chunk of series %s (id %d, min_t %d) is damaged (%s): its %d samples from %s to %s are lost",
		d.Series, d.SeriesID, d.MinT, d.Why, d.Samples, d.From.UTC().Format(layout), d.To.UTC().Format(layout))
}

// maxDamageListed bounds the damaged chunks a check names (and a store
// remembers): the count is always given.
const maxDamageListed = 20

// SkipDamaged makes reads skip a damaged chunk (its samples are missing
// from the result, and the chunk is listed by Skipped) instead of failing.
// For readers that were told of the damage already (a check's note).
func (s *Store) SkipDamaged(skip bool) { s.skipDamaged.Store(skip) }

// Skipped returns the damaged chunks reads skipped since Open (the first
// 20) and how many there were.
func (s *Store) Skipped() ([]Damage, int) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	return append([]Damage(nil), s.skipped...), s.nSkipped
}

// damaged is the outcome of reading damaged chunk d: an error naming it,
// or with SkipDamaged nil, d remembered and its samples left out.
func (s *Store) damaged(d Damage) error {
	if !s.skipDamaged.Load() {
		return corruptf(s.path, d.String()+"; "+chunkHint(s.path))
	}
	s.dmu.Lock()
	defer s.dmu.Unlock()
	s.nSkipped++
	if len(s.skipped) < maxDamageListed {
		s.skipped = append(s.skipped, d)
	}
	return nil
}

// crcFunc is the SQL name of chunkCRC: the check computes the checksums
// inside SQLite, without copying each chunk out (a scan through
// database/sql took three times as long as the quick_check of the pages).
const crcFunc = "memdoctor_chunk_crc"

func init() {
	sqlite.MustRegisterFunction(crcFunc, &sqlite.FunctionImpl{
		NArgs:         5,
		Deterministic: true,
		VolatileArgs:  true, // data is read here and not kept
		Scalar: func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			var n [4]int64
			for i := range n {
				v, ok := args[i].(int64)
				if !ok {
					return nil, nil // not a chunk row: NULL, which no crc equals
				}
				n[i] = v
			}
			var data []byte
			switch d := args[4].(type) {
			case []byte:
				data = d
			case string:
				data = []byte(d)
			default:
				return nil, nil
			}
			return chunkCRC(n[0], n[1], n[2], n[3], data), nil
		},
	})
}

// checkChunks checks every chunk row: its checksum, or, for a chunk
// without one (a format 1 store read without upgrading it), that its
// samples decode in order within its range. It returns the first damaged
// chunks and their count.
func (s *Store) checkChunks(tx *sql.Tx) ([]Damage, int, error) {
	var list []Damage
	n := 0
	add := func(id, minT, maxT, count int64, why string) {
		n++
		if len(list) < maxDamageListed {
			list = append(list, Damage{SeriesID: id, MinT: minT, From: time.UnixMilli(minT), To: time.UnixMilli(maxT), Samples: count, Why: why})
		}
	}
	if s.hasCRC {
		rows, err := tx.Query(`SELECT series_id, min_t, max_t, num_samples FROM chunks
			WHERE crc IS NOT NULL AND crc IS NOT ` + crcFunc + `(series_id, min_t, max_t, num_samples, data)`)
		if err != nil {
			return nil, 0, s.wrap("check chunks", err)
		}
		for rows.Next() {
			var id, minT, maxT, count int64
			if err := rows.Scan(&id, &minT, &maxT, &count); err != nil {
				_ = rows.Close()
				return nil, 0, s.wrap("check chunks", err)
			}
			add(id, minT, maxT, count, "checksum mismatch")
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, s.wrap("check chunks", err)
		}
	}
	// Chunks without a checksum: the structural checks, in Go.
	q := "SELECT series_id, min_t, max_t, num_samples, data FROM chunks"
	if s.hasCRC {
		q += " WHERE crc IS NULL"
	}
	rows, err := tx.Query(q)
	if err != nil {
		return nil, 0, s.wrap("check chunks", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	sn := &queryTx{s: s, tx: tx}
	for rows.Next() {
		var id, minT, maxT, count int64
		var data sql.RawBytes
		if err := rows.Scan(&id, &minT, &maxT, &count, &data); err != nil {
			return nil, 0, s.wrap("check chunks", err)
		}
		if why := sn.walkChunk(minT, maxT, count, data, math.MinInt64, math.MaxInt64, nil); why != "" {
			add(id, minT, maxT, count, why)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.wrap("check chunks", err)
	}
	// The series of the damaged chunks, looked up once the scan is done
	// (a join would cost every chunk its name).
	for i := range list {
		var name, labels string
		err := tx.QueryRow("SELECT name, labels FROM series WHERE id = ?", list[i].SeriesID).Scan(&name, &labels)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			list[i].Series = "(a series missing from the series table)"
		case err != nil:
			return nil, 0, s.wrap("check chunks", err)
		default:
			list[i].Series = name + labels
		}
	}
	return list, n, nil
}

// damageError is the error of a check that found damaged chunks.
func (s *Store) damageError(list []Damage, n int) error {
	msgs := make([]string, 0, len(list)+1)
	for _, d := range list {
		msgs = append(msgs, d.String())
	}
	if n > len(list) {
		msgs = append(msgs, fmt.Sprintf("and %d more damaged chunks", n-len(list)))
	}
	return corruptf(s.path, fmt.Sprintf("%d damaged chunk(s): %s; %s", n, strings.Join(msgs, "; "), chunkHint(s.path)))
}

// chunkHint tells what to do about damaged chunks: their samples are lost
// (SQLite's .recover copies the damaged bytes as they are), the rest reads.
func chunkHint(path string) string {
	return fmt.Sprintf("their samples are lost: read the rest with --lenient, which skips the damaged chunks, or copy the file, delete them from the copy (sqlite3 COPY \"DELETE FROM chunks WHERE series_id = ID AND min_t = MIN_T\") and use it; %s itself is left as it is", path)
}
